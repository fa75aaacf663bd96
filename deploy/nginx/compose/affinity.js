// The affinity cookie of deploy/nginx/attnviz.conf, issued and checked by nginx's JavaScript module (njs 0.7+).
//
// A cookie is "<id>.<tag>": a random id (nginx's $request_id, 32 hex digits) and the first 128 bits of its
// HMAC-SHA256 under a secret only the proxy knows (hex). A browser cannot choose its replica: a value this proxy did
// not issue is refused and replaced by a freshly issued one, so it is never echoed back or hashed as sent.
//
// The secret comes from the environment variable ATTNVIZ_AFFINITY_SECRET (at least 32 characters; the main
// nginx.conf must keep it with `env ATTNVIZ_AFFINITY_SECRET;`, since nginx clears its workers' environment).
// Compose generates one when the proxy starts (deploy/nginx/compose/start.sh). Several proxies in front of the
// same replicas must share one secret, or each refuses the others' cookies. Without a usable secret both
// variables are empty and the site answers 500 (a cookie signed with a known or empty key would be forgeable).
//
// njs runs this file in a fresh virtual machine for every request: nothing here survives from one request to the
// next, which is why the secret cannot simply be generated at the top of this file.

import crypto from 'crypto';

const COOKIE = /^[0-9a-f]{32}\.[0-9a-f]{32}$/;
const MIN_SECRET_LENGTH = 32;

function secret(r) {
    const value = process.env.ATTNVIZ_AFFINITY_SECRET || '';
    if (value.length < MIN_SECRET_LENGTH) {
        r.error(`attnviz: ATTNVIZ_AFFINITY_SECRET must hold at least ${MIN_SECRET_LENGTH} characters ` +
                '(and nginx.conf must say `env ATTNVIZ_AFFINITY_SECRET;`)');
        return '';
    }
    return value;
}

function tag(key, id) {
    return crypto.createHmac('sha256', key).update(id).digest('hex').slice(0, 32);
}

// Compares two strings of equal length in time that does not depend on where they differ.
function same(a, b) {
    if (a.length !== b.length) {
        return false;
    }
    let diff = 0;
    for (let i = 0; i < a.length; i++) {
        diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
    }
    return diff === 0;
}

// The browser's cookie if this proxy issued it, else ''.
function presented(r, key) {
    const cookie = r.variables.cookie_attnviz_affinity || '';
    if (!COOKIE.test(cookie)) {
        return '';
    }
    const dot = cookie.indexOf('.');
    return same(cookie.slice(dot + 1), tag(key, cookie.slice(0, dot))) ? cookie : '';
}

// A new cookie value for this request, the same one however often it is asked for. $attnviz_request_id is
// $request_id through a map in attnviz.conf: read by name alone, nginx makes a new $request_id at every read, and the
// replica a first request was sent to, the cookie it was given and the per-cookie count would each get another id.
function issue(r, key) {
    const id = r.variables.attnviz_request_id;
    return `${id}.${tag(key, id)}`;
}

// $attnviz_affinity: the browser's valid cookie, or the one issued with this response; '' without a secret.
function affinity(r) {
    const key = secret(r);
    return key ? presented(r, key) || issue(r, key) : '';
}

// $attnviz_affinity_issued: the value to send in Set-Cookie, '' when the browser's cookie is valid.
function issued(r) {
    const key = secret(r);
    return key && !presented(r, key) ? issue(r, key) : '';
}

export default { affinity, issued };
