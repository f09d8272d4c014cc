// A tick in the page's number format. Args: locale, decimals (at most), least (at least).
return tick.toLocaleString(locale, {minimumFractionDigits: least, maximumFractionDigits: decimals})
