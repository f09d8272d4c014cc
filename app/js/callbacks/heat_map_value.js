// A heat map cell's value in the page's number format (0,500 in Italian), as its colour bar writes it; the
// cell holds a number, or a colour index (index / 127 − 1 of the range; 255: empty). Args: mapper, scale, locale.
const written = (x) => x.toLocaleString(locale, {minimumFractionDigits: 3, maximumFractionDigits: 3})
if (mapper.high_color == null) { return written(value) }          // numbers
if (value >= 255) { return "—" }                                  // an empty cell
return written((value / 127 - 1) * scale.high)
