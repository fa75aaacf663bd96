// Links over what Streamlit reads, answered by the proxy (deploy/nginx/attnviz.conf; njs 0.7.9+).
//
// Streamlit reads a page's query string of at most 512 Ki characters and 1,000 fields (counted as its "&" plus one)
// and runs the page without a longer one, without a word: a student would see the defaults and not know why. The
// proxy answers such a link itself (414) with link-too-long.html, which says so in every interface language and
// what to do instead; `make i18n` writes that page from the app's catalogues (attnviz/app/links.py). The limits are
// attnviz/app/links.py's LINK_MAX_CHARS and LINK_MAX_FIELDS; a test checks that they agree with Streamlit's.

import fs from 'fs';

const MAX_CHARS = 512 * 1024;
const MAX_FIELDS = 1000;
const PAGE = 'attnviz/link-too-long.html';
const SHORT_ARGS = 8192;

// $attnviz_link_too_long: '1' when Streamlit would ignore this request's query string, else ''.
function tooLong(r) {
    const query = r.variables.args || '';
    if (query.length > MAX_CHARS) {
        return '1';
    }
    let fields = 1;
    for (let at = query.indexOf('&'); at !== -1; at = query.indexOf('&', at + 1)) {
        if (++fields > MAX_FIELDS) {
            return '1';
        }
    }
    return '';
}

// $attnviz_short_args: this request's query string if it is at most 8 KiB, else ''. The replica's HTTP server serves
// a page the same whatever its query string (the browser keeps it and sends it over the WebSocket), and refuses a
// request line over 16 KiB that reaches it in more than one piece: a long link is passed to it without its query.
function shortArgs(r) {
    const query = r.variables.args || '';
    return query.length <= SHORT_ARGS ? query : '';
}

// The page that explains (read from next to this file; nginx's configuration directory is ngx.conf_prefix).
function page(r) {
    r.headersOut['Content-Type'] = 'text/html; charset=utf-8';
    r.headersOut['Cache-Control'] = 'no-store';
    r.return(414, fs.readFileSync(ngx.conf_prefix + PAGE));
}

export default { tooLong, shortArgs, page };
