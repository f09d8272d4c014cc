// The page again with ?lang=<choice>: every string is drawn again in the new language, the rest comes from the
// URL. Args: codes (the languages, in the buttons' order).
const url = new URL(window.location.href);
url.searchParams.set("lang", codes[cb_obj.active]);
window.location.assign(url.toString());
