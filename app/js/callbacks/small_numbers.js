// Tick labels of tiny differences as 5,0 · 10⁻⁶ in the page's number format (Bokeh's own wrote 5.0e-6 and
// 0.0e+0 on Italian pages too). Args: locale.
if (tick === 0) { return "0" }
const power = Math.floor(Math.log10(Math.abs(tick)))
const digits = {"-": "⁻", "0": "⁰", "1": "¹", "2": "²", "3": "³", "4": "⁴", "5": "⁵", "6": "⁶", "7": "⁷",
                "8": "⁸", "9": "⁹"}
const mantissa = (tick / 10 ** power).toLocaleString(locale, {minimumFractionDigits: 1,
                                                              maximumFractionDigits: 1})
return mantissa + " · 10" + String(power).split("").map(c => digits[c]).join("")
