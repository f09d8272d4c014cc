// A tick as a power of ten (10⁴, 10⁶ …): a count's size at a glance, the same in every language.
const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
const exponent = String(Math.round(Math.log10(tick)))
return "10" + [...exponent].map(c => digits[Number(c)]).join("")
