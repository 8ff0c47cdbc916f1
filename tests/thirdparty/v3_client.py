#!/usr/bin/env python3
"""Independent third-party conformance client for the v3 email-marketing REST API.

Written only from the written contract:
  * /work/shared/spec/api-v3.md   (the contract: endpoints, fields, states, limits)
  * /work/shared/docs/wire.md     (response shapes and habits of real clients)

Usage:
    python3 tests/thirdparty/v3_client.py --credentials FILE [--code CODE --redirect-uri URI]

FILE is JSON: {"base_url", "client_id", "client_secret", "access_token",
"refresh_token", "expires_in"}.  --code is an OAuth authorization code (valid a
few seconds) minted for that client with that redirect_uri; when given, the
authorization_code grant is checked first.

Prints one line per check ("ok   name" or "FAIL name: reason [request -> response]"),
then "N passed, N failed"; exit code 0 only when nothing failed.
Standard library only.  Tokens and the client secret are never printed.

Checking policy: where spec or wire.md state something, it is checked strictly;
where both leave a shape open, only what is stated is checked.
"""

import argparse
import base64
import http.client
import json
import random
import re
import string
import sys
import time
import traceback
import urllib.parse
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape as xml_escape

NO = object()      # "no body" / "no JSON" sentinel
SKIP = object()    # a check returns this when it does not apply
RUN = "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(6))
_counter = [0]


def _next():
    _counter[0] += 1
    return _counter[0]


def uniq(prefix="g"):
    """A unique name for this run."""
    return f"{prefix}{RUN}{_next()}"


def mail(tag="r"):
    """A unique lower-case email address for this run."""
    return f"tp{RUN}-{tag}-{_next()}@example.com"


# --------------------------------------------------------------------------
# transport

class CheckFail(Exception):
    pass


_TOKEN_JSON_RE = re.compile(r'("(?:access_token|refresh_token)"\s*:\s*")[^"]*(")')
_TOKEN_XML_RE = re.compile(r"(<(access_token|refresh_token)>)[^<]*(</\2>)")


class Resp:
    def __init__(self, api, method, shown, reqbody, status, headers, raw):
        self.api = api
        self.method = method
        self.shown = shown
        self.reqbody = reqbody
        self.status = status
        self.headers = headers
        self.ctype = headers.get("Content-Type") or ""
        self.raw = raw
        self.text = raw.decode("utf-8", "replace")
        self.json = NO
        self.xml = None
        if "xml" in self.ctype.lower():
            try:
                self.xml = ET.fromstring(raw)
            except ET.ParseError:
                self.xml = None
        elif self.text.strip():
            try:
                self.json = json.loads(self.text)
            except ValueError:
                self.json = NO

    def desc(self):
        rb = ""
        if self.reqbody is not None:
            s = self.reqbody.decode("utf-8", "replace")
            if len(s) > 300:
                s = s[:300] + f"...({len(self.reqbody)} bytes)"
            rb = " body=" + s
        body = self.text
        if len(body) > 600:
            body = body[:600] + f"...({len(self.raw)} bytes)"
        ct = f" [{self.ctype}]" if self.ctype else " [no content-type]"
        return self.api.redact(f"{self.method} {self.shown}{rb} -> HTTP {self.status}{ct} {body}")


class Api:
    def __init__(self, creds):
        u = urllib.parse.urlsplit(creds["base_url"])
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port or (443 if self.https else 80)
        self.prefix = u.path.rstrip("/")
        self.client_id = str(creds["client_id"])
        self.client_secret = str(creds["client_secret"])
        self.token = creds["access_token"]
        self.refresh_token = creds.get("refresh_token") or ""
        self.expires_in = creds.get("expires_in")
        self.secrets = set()
        for s in (self.client_secret, self.token, self.refresh_token):
            self.remember(s)
        self.last = None
        self.code = None
        self.redirect_uri = None

    def remember(self, secret):
        if isinstance(secret, str) and len(secret) >= 6:
            self.secrets.add(secret)
            self.secrets.add(urllib.parse.quote(secret, safe=""))
            self.secrets.add(urllib.parse.quote_plus(secret))

    def redact(self, s):
        for sec in sorted(self.secrets, key=len, reverse=True):
            s = s.replace(sec, "<redacted>")
        s = _TOKEN_JSON_RE.sub(r"\1<redacted>\2", s)
        s = _TOKEN_XML_RE.sub(r"\1<redacted>\3", s)
        return s

    def call(self, method, path, body=NO, *, query=None, ctype="json", auth="bearer",
             token=None, accept=None, headers=None, raw=None):
        """auth: bearer | query (?token=) | header (X-ACCESS-TOKEN) | none.
        ctype: json | form | xml | none (no Content-Type header) | literal value."""
        hdrs = {}
        q = list(query.items()) if isinstance(query, dict) else list(query or [])
        q = [(k, str(v)) for k, v in q]
        shown_q = list(q)
        tok = self.token if token is None else token
        if auth == "bearer":
            hdrs["Authorization"] = "Bearer " + tok
        elif auth == "query":
            q.append(("token", tok))
            shown_q.append(("token", "<token>"))
        elif auth == "header":
            hdrs["X-ACCESS-TOKEN"] = tok
        data = None
        if raw is not None:
            data = raw.encode("utf-8") if isinstance(raw, str) else raw
        elif body is not NO:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        if data is not None:
            ct = {"json": "application/json", "form": "application/x-www-form-urlencoded",
                  "xml": "application/xml", "none": None}.get(ctype, ctype)
            if ct:
                hdrs["Content-Type"] = ct
        if accept:
            hdrs["Accept"] = accept
        if headers:
            hdrs.update(headers)

        def qs(items):
            if not items:
                return ""
            return "?" + urllib.parse.urlencode(items, quote_via=urllib.parse.quote, safe="")

        url = self.prefix + path + qs(q)
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        conn = cls(self.host, self.port, timeout=60)
        try:
            conn.request(method, url, body=data, headers=hdrs)
            resp = conn.getresponse()
            raw_resp = resp.read()
            status, rh = resp.status, resp.headers
        finally:
            conn.close()
        r = Resp(self, method, self.prefix + path + qs(shown_q), data, status, rh, raw_resp)
        self.last = r
        return r

    def get(self, path, **kw):
        return self.call("GET", path, **kw)

    def post(self, path, body=NO, **kw):
        return self.call("POST", path, body, **kw)

    def put(self, path, body=NO, **kw):
        return self.call("PUT", path, body, **kw)

    def delete(self, path, body=NO, **kw):
        return self.call("DELETE", path, body, **kw)


# --------------------------------------------------------------------------
# assertion helpers

def fail(msg, r=None):
    raise CheckFail(msg + (f" [{r.desc()}]" if r is not None else ""))


def expect(cond, msg, r=None):
    if not cond:
        fail(msg, r)


def want(r, status=200):
    """Expect the status and return the parsed JSON body (or NO)."""
    if r.status != status:
        fail(f"expected HTTP {status}", r)
    return r.json


def want_json(r, typ, what="body"):
    j = want(r)
    expect(j is not NO, f"expected a JSON {what}", r)
    expect(isinstance(j, typ), f"expected JSON {what} of type {getattr(typ, '__name__', typ)}", r)
    return j


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_idstr(v):
    return isinstance(v, str) and re.fullmatch(r"[0-9]+", v) is not None


def empty(v):
    return v is None or v == {} or v == [] or v == ""


def error_body(r, statuses):
    """wire.md: every error body is {"error": {"code": <status>, "message": ...}}."""
    if isinstance(statuses, int):
        statuses = (statuses,)
    expect(r.status in statuses, f"expected HTTP {'/'.join(map(str, statuses))}", r)
    j = r.json
    expect(isinstance(j, dict) and isinstance(j.get("error"), dict),
           'error body must be {"error": {"code": <status>, "message": "..."}} (wire.md Errors)', r)
    e = j["error"]
    expect(is_int(e.get("code")) and e.get("code") == r.status,
           "error.code must be the integer HTTP status (wire.md Errors)", r)
    expect(isinstance(e.get("message"), str), "error.message must be a string (wire.md Errors)", r)


def emails_of(items):
    """Lists may hold objects carrying `email` or bare strings (shape left open)."""
    out = []
    for x in items:
        if isinstance(x, dict):
            out.append(x.get("email"))
        elif isinstance(x, str):
            out.append(x)
    return out


def now():
    return int(time.time())


# --------------------------------------------------------------------------
# resource helpers (setup steps inside checks)

GROUP_FIELDS = ("id", "name", "locked", "backup", "receiver_info", "stamp", "last_mailing", "last_changed")


def check_group_obj(g, r, name=None):
    expect(isinstance(g, dict), "group must be a JSON object", r)
    for f in GROUP_FIELDS:
        expect(f in g, f"group lacks field {f!r} (wire.md Group shape)", r)
    expect(is_idstr(g["id"]), "group id must be a JSON string of digits (wire.md Types)", r)
    expect(isinstance(g["locked"], bool) and isinstance(g["backup"], bool),
           "locked/backup must be JSON booleans (wire.md Types)", r)
    expect(isinstance(g["receiver_info"], str), "receiver_info must be a string", r)
    for f in ("stamp", "last_mailing", "last_changed"):
        expect(is_int(g[f]), f"group {f} must be an integer timestamp (wire.md Types)", r)
    if name is not None:
        expect(g["name"] == name, f"group name should be {name!r}", r)


def mk_group(api, prefix="g", **extra):
    name = uniq(prefix)
    r = api.post("/v3/groups", {"name": name, **extra})
    j = want(r)
    expect(isinstance(j, dict) and is_idstr(j.get("id")),
           "setup: POST /v3/groups must answer an object with a digit-string id", r)
    return j["id"]


TS_FIELDS = ("registered", "activated", "deactivated", "imported", "bounced")


def check_receiver_obj(x, r, email=None, gid=None):
    expect(isinstance(x, dict), "receiver must be a JSON object", r)
    expect(is_idstr(x.get("id")), "receiver id must be a JSON string of digits (wire.md Types)", r)
    expect(isinstance(x.get("email"), str), "receiver must carry email", r)
    if email is not None:
        expect(x["email"] == email, f"receiver email should be {email!r}", r)
    for f in TS_FIELDS:
        expect(f in x, f"receiver lacks timestamp {f!r} (spec 2.7 / wire.md Receiver)", r)
        expect(is_int(x[f]), f"receiver {f} must be an integer (0 for never), got {x[f]!r} (wire.md Types)", r)
    expect(isinstance(x.get("active"), bool), "receiver `active` must be a JSON boolean (wire.md Types)", r)
    for f in ("attributes", "global_attributes"):
        expect(f in x, f"receiver lacks {f!r} (spec 2.7)", r)
        expect(isinstance(x[f], dict) or x[f] == [],
               f"receiver {f} must be an object name -> value (spec 2.7)", r)
    if gid is not None:
        expect(str(x.get("group_id")) == str(gid),
               f"receiver read in group {gid} should carry group_id {gid!r} (wire.md Receiver)", r)
        expect(is_idstr(x.get("group_id")), "receiver group_id must be a digit string (wire.md Types)", r)


def mk_recv(api, gid, fields, wrap=True, **kw):
    body = {"postdata": fields} if wrap else fields
    r = api.post(f"/v3/groups/{gid}/receivers", body, **kw)
    j = want(r)
    expect(isinstance(j, dict) and is_idstr(j.get("id")),
           "POST /v3/groups/{id}/receivers must answer the created receiver (object with digit-string id)", r)
    return j, r


def get_recv(api, gid, rid, **kw):
    r = api.get(f"/v3/groups/{gid}/receivers/{rid}", **kw)
    j = want_json(r, dict, "receiver")
    return j, r


def list_recv(api, gid, path=None, **params):
    r = api.get(path or f"/v3/groups/{gid}/receivers", query=params)
    j = want_json(r, list, "receiver list")
    for x in j:
        expect(isinstance(x, dict), "receiver list items must be receiver objects", r)
    return j, r


def type_membership(api, gid, email, present=(), absent=()):
    for t in present:
        items, r = list_recv(api, gid, type=t)
        expect(email in emails_of(items), f"{email} should be listed with type={t}", r)
    for t in absent:
        items, r = list_recv(api, gid, type=t)
        expect(email not in emails_of(items), f"{email} must not be listed with type={t}", r)


def attr_obj(a, r, name=None, typ=None, group_id=None):
    expect(isinstance(a, dict), "attribute must be a JSON object", r)
    expect(is_int(a.get("id")), "attribute id must be a JSON number (wire.md Types)", r)
    for f in ("name", "type", "group_id", "description", "preview_value", "default_value"):
        expect(f in a, f"attribute lacks {f!r} (wire.md Attribute shape)", r)
    expect("groups_id" in a and "value" in a,
           "attribute must carry both spellings groups_id and value (wire.md: 'send both spellings')", r)
    expect(str(a["groups_id"]) == str(a["group_id"]), "groups_id must equal group_id", r)
    if name is not None:
        expect(a["name"] == name, f"attribute name should be {name!r}", r)
    if typ is not None:
        expect(a["type"] == typ, f"attribute type should be {typ!r}", r)
    if group_id is not None:
        if str(group_id) == "0":
            expect(is_int(a["group_id"]) and a["group_id"] == 0,
                   "global attribute must have group_id 0 (wire.md)", r)
        else:
            expect(str(a["group_id"]) == str(group_id), f"attribute group_id should be {group_id}", r)


def mk_attr(api, name=None, typ="text", path="/v3/attributes", **extra):
    name = name or uniq("a")
    r = api.post(path, {"name": name, "type": typ, **extra})
    j = want(r)
    expect(isinstance(j, dict) and is_int(j.get("id")),
           f"POST {path} must answer the attribute object with a numeric id", r)
    return j, r


def token_fields(r, what="token response"):
    j = want_json(r, dict, what)
    expect("application/json" in r.ctype.lower(), "token answer must be Content-Type application/json (wire.md OAuth)", r)
    expect(isinstance(j.get("access_token"), str) and j["access_token"], "access_token missing (spec 5.7)", r)
    expect(isinstance(j.get("refresh_token"), str) and j["refresh_token"], "refresh_token missing (spec 5.7)", r)
    expect(is_int(j.get("expires_in")) and j["expires_in"] > 0, "expires_in must be a positive integer (spec 5.7)", r)
    expect(isinstance(j.get("scope"), str), "scope must be a string (spec 5.7)", r)
    expect(j.get("token_type") == "bearer", 'token_type must be "bearer" (wire.md OAuth)', r)
    return j


def token_request(api, fields, enc="form", basic=None, basic_sep=" "):
    hdrs = {}
    if basic:
        cred = base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
        hdrs["Authorization"] = "Basic" + basic_sep + cred
    if enc == "form":
        return api.post("/oauth/token.php", raw=urllib.parse.urlencode(fields), ctype="form",
                        auth="none", headers=hdrs)
    if enc == "json":
        return api.post("/oauth/token.php", fields, ctype="json", auth="none", headers=hdrs)
    if enc == "raw":
        return api.post("/oauth/token.php", raw="&" + urllib.parse.urlencode(fields), ctype="none",
                        auth="none", headers=hdrs)
    if enc == "multipart":
        boundary = "----tp" + RUN + "boundary"
        parts = []
        for k, v in fields.items():
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n')
        parts.append(f"--{boundary}--\r\n")
        return api.post("/oauth/token.php", raw="".join(parts),
                        ctype=f"multipart/form-data; boundary={boundary}", auth="none", headers=hdrs)
    raise ValueError(enc)


def adopt(api, j, refresh=True):
    api.remember(j.get("access_token"))
    api.remember(j.get("refresh_token"))
    api.token = j["access_token"]
    if refresh and j.get("refresh_token"):
        api.refresh_token = j["refresh_token"]


def token_works(api, tok):
    r = api.get("/v3/debug/whoami", token=tok)
    j = want(r)
    expect(isinstance(j, dict) and "id" in j, "the new access token must work on /v3/debug/whoami", r)


def xfind(el, tag):
    if el is None:
        return None
    for c in el:
        if c.tag == tag:
            return c
    return el.find(".//" + tag)


def xtext(el, tag):
    e = xfind(el, tag)
    return None if e is None else (e.text or "")


def xml_body(root, fields):
    inner = "".join(f"<{k}>{xml_escape(str(v))}</{k}>" for k, v in fields.items())
    return f'<?xml version="1.0" encoding="UTF-8"?><{root}>{inner}</{root}>'


def xml_root_name(api):
    """The server's XML mapping is its own (wire.md); learn its root element name
    from a response and use the same one for requests ("the same both ways")."""
    r = api.get("/v3/debug/whoami", accept="application/xml")
    expect(r.status == 200 and "xml" in r.ctype.lower() and r.xml is not None,
           "Accept: application/xml must produce an XML response (wire.md)", r)
    return r.xml.tag


# --------------------------------------------------------------------------
# checks

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


# ---- OAuth -----------------------------------------------------------------

@check
def oauth_authorization_code_grant(api):
    if not api.code:
        return SKIP
    r = token_request(api, {"grant_type": "authorization_code", "code": api.code,
                            "redirect_uri": api.redirect_uri or "",
                            "client_id": api.client_id, "client_secret": api.client_secret})
    j = token_fields(r)
    token_works(api, j["access_token"])
    adopt(api, j)


@check
def oauth_refresh_grant_form_fields_secret_in_body(api):
    r = token_request(api, {"grant_type": "refresh_token", "refresh_token": api.refresh_token,
                            "client_id": api.client_id, "client_secret": api.client_secret})
    j = token_fields(r)
    token_works(api, j["access_token"])
    adopt(api, j)


@check
def oauth_refresh_grant_http_basic(api):
    r = token_request(api, {"grant_type": "refresh_token", "refresh_token": api.refresh_token},
                      basic=(api.client_id, api.client_secret))
    j = token_fields(r)
    token_works(api, j["access_token"])
    adopt(api, j)


@check
def oauth_client_credentials_grant_json_body(api):
    r = token_request(api, {"grant_type": "client_credentials", "client_id": api.client_id,
                            "client_secret": api.client_secret}, enc="json")
    j = token_fields(r)
    token_works(api, j["access_token"])
    adopt(api, j, refresh=False)


@check
def oauth_basic_auth_with_several_spaces(api):
    r = token_request(api, {"grant_type": "client_credentials"},
                      basic=(api.client_id, api.client_secret), basic_sep="    ")
    j = token_fields(r)
    api.remember(j["access_token"])
    api.remember(j["refresh_token"])
    token_works(api, j["access_token"])


@check
def oauth_multipart_body(api):
    r = token_request(api, {"grant_type": "client_credentials", "client_id": api.client_id,
                            "client_secret": api.client_secret}, enc="multipart")
    j = token_fields(r)
    api.remember(j["access_token"])
    api.remember(j["refresh_token"])


@check
def oauth_raw_ampersand_body(api):
    r = token_request(api, {"grant_type": "client_credentials", "client_id": api.client_id,
                            "client_secret": api.client_secret}, enc="raw")
    j = token_fields(r)
    api.remember(j["access_token"])
    api.remember(j["refresh_token"])


@check
def oauth_wrong_secret_is_invalid_client(api):
    wrong = api.client_secret + "x"
    api.remember(wrong)
    for r in (token_request(api, {"grant_type": "client_credentials", "client_id": api.client_id,
                                  "client_secret": wrong}),
              token_request(api, {"grant_type": "client_credentials"}, basic=(api.client_id, wrong))):
        expect(r.status in (400, 401), "wrong client secret must answer 400/401 (wire.md OAuth)", r)
        expect(isinstance(r.json, dict) and r.json.get("error") == "invalid_client",
               'wrong client secret must answer {"error": "invalid_client", ...}', r)
        expect(isinstance(r.json.get("error_description"), str), "error_description must be a string", r)


@check
def oauth_unknown_grant_is_unsupported_grant_type(api):
    r = token_request(api, {"grant_type": "urn:example:no-such-grant", "client_id": api.client_id,
                            "client_secret": api.client_secret})
    expect(r.status in (400, 401), "unknown grant must answer 400/401", r)
    expect(isinstance(r.json, dict) and r.json.get("error") == "unsupported_grant_type",
           'unknown grant must answer {"error": "unsupported_grant_type"}', r)
    expect(isinstance(r.json.get("error_description"), str), "error_description must be a string", r)


@check
def oauth_garbage_refresh_token_is_invalid_grant(api):
    r = token_request(api, {"grant_type": "refresh_token", "refresh_token": "garbage-" + RUN,
                            "client_id": api.client_id, "client_secret": api.client_secret})
    expect(r.status in (400, 401), "bad refresh token must answer 400/401", r)
    expect(isinstance(r.json, dict) and r.json.get("error") == "invalid_grant",
           'bad refresh token must answer {"error": "invalid_grant"}', r)


# ---- Debug / auth --------------------------------------------------------------

@check
def debug_whoami_json_suffix_on_every_segment(api):
    r = api.get("/v3/debug.json/whoami.json")
    j = want_json(r, dict, "whoami")
    expect(is_idstr(j.get("id")), "whoami must carry id as a digit string (wire.md: clients require id)", r)
    expect("application/json" in r.ctype.lower(), "responses are Content-Type application/json (wire.md)", r)


@check
def debug_whoami_token_in_query(api):
    r = api.get("/v3/debug/whoami", auth="query")
    j = want_json(r, dict, "whoami")
    expect(is_idstr(j.get("id")), "whoami must carry id", r)


@check
def debug_ttl_with_x_access_token(api):
    r = api.get("/v3/debug/ttl", auth="header")
    j = want_json(r, dict, "ttl")
    expect(is_num(j.get("ttl")), "ttl answer must carry a numeric `ttl` (wire.md)", r)
    expect(j["ttl"] > 0, "ttl of a fresh token must be positive", r)


@check
def debug_validate(api):
    r = api.get("/v3/debug/validate")
    j = want(r)
    expect(j is not NO, "validate must answer a JSON body", r)


@check
def debug_exchange_invalidates_old_token(api):
    spare, own = None, False
    r = token_request(api, {"grant_type": "client_credentials", "client_id": api.client_id,
                            "client_secret": api.client_secret})
    if r.status == 200 and isinstance(r.json, dict) and isinstance(r.json.get("access_token"), str):
        spare = r.json["access_token"]
        api.remember(spare)
        api.remember(r.json.get("refresh_token"))
    else:
        spare, own = api.token, True
    r = api.get("/v3/debug/exchange", token=spare)
    j = token_fields(r, "exchange answer (wire.md: the token response shape)")
    new = j["access_token"]
    api.remember(new)
    api.remember(j.get("refresh_token"))
    if own:
        adopt(api, j)
    expect(new != spare, "exchange must return a new token", r)
    r = api.get("/v3/debug/whoami", token=spare)
    error_body(r, 401)
    token_works(api, new)


@check
def auth_missing_token_is_401(api):
    for path in ("/v3/groups", "/v3/debug/whoami"):
        r = api.get(path, auth="none")
        error_body(r, 401)


@check
def auth_garbage_token_is_401(api):
    bad = "garbage" + RUN
    for mode in ("bearer", "query", "header"):
        r = api.get("/v3/groups", auth=mode, token=bad)
        error_body(r, 401)


# ---- Groups ------------------------------------------------------------------

@check
def group_create(api):
    name = uniq("grp")
    r = api.post("/v3/groups", {"name": name, "receiver_info": "info " + RUN, "locked": False, "backup": True})
    j = want(r)
    check_group_obj(j, r, name)
    expect(j["receiver_info"] == "info " + RUN, "receiver_info must be stored", r)
    expect(j["locked"] is False and j["backup"] is True, "locked/backup must be stored", r)


@check
def group_get_with_json_suffix(api):
    name = uniq("grp")
    r = api.post("/v3/groups", {"name": name, "locked": True, "backup": False})
    j = want(r)
    expect(isinstance(j, dict) and is_idstr(j.get("id")), "setup create", r)
    gid = j["id"]
    for path in (f"/v3/groups/{gid}", f"/v3/groups.json/{gid}", f"/v3/groups/{gid}.json"):
        r = api.get(path)
        g = want(r)
        check_group_obj(g, r, name)
        expect(g["id"] == gid and g["locked"] is True and g["backup"] is False, "stored values must be read back", r)


@check
def group_update(api):
    name = uniq("grp")
    r = api.post("/v3/groups", {"name": name, "receiver_info": "before", "locked": False, "backup": True})
    gid = want(r)["id"]
    new = uniq("grpupd")
    r = api.put(f"/v3/groups/{gid}", {"name": new, "locked": True}, auth="header")
    want(r)
    r = api.get(f"/v3/groups/{gid}")
    g = want(r)
    check_group_obj(g, r, new)
    expect(g["locked"] is True, "locked must be updated", r)
    expect(g["backup"] is True and g["receiver_info"] == "before", "fields not sent must stay unchanged", r)
    r = api.put(f"/v3/groups/{gid}", {"receiver_info": "after", "backup": False})
    want(r)
    r = api.get(f"/v3/groups/{gid}")
    g = want(r)
    check_group_obj(g, r, new)
    expect(g["receiver_info"] == "after" and g["backup"] is False and g["locked"] is True,
           "partial update must change only the given fields", r)


@check
def group_delete(api):
    gid = mk_group(api)
    r = api.delete(f"/v3/groups/{gid}")
    j = want(r)
    expect(j is True, "deletes answer true (wire.md: 'true for deletes')", r)
    r = api.get(f"/v3/groups/{gid}")
    error_body(r, 404)
    r = api.get("/v3/groups")
    lst = want_json(r, list, "group list")
    expect(gid not in [x.get("id") for x in lst if isinstance(x, dict)], "deleted group must not be listed", r)


@check
def group_list_order(api):
    g1 = mk_group(api, "ord")
    time.sleep(1.2)
    g2 = mk_group(api, "ord")
    time.sleep(1.2)
    r = api.put(f"/v3/groups/{g1}", {"receiver_info": "touched"})
    want(r)
    r = api.get("/v3/groups")
    lst = want_json(r, list, "group list")
    for x in lst:
        expect(isinstance(x, dict) and is_idstr(x.get("id")), "group list items must be groups with digit-string ids", r)
    for order, first, second in (("created ASC", g1, g2), ("created DESC", g2, g1),
                                 ("changed ASC", g2, g1), ("changed DESC", g1, g2)):
        r = api.get("/v3/groups", query={"order": order})
        lst = want_json(r, list, "group list")
        ids = [x.get("id") for x in lst if isinstance(x, dict)]
        expect(first in ids and second in ids, f"order={order}: both groups must be listed", r)
        expect(ids.index(first) < ids.index(second),
               f"order={order}: group {first} must come before {second}", r)


STAT_FIELDS = ("total_count", "inactive_count", "active_count", "bounce_count", "avg_points",
               "quality", "time", "order_count")


@check
def group_stats(api):
    gid = mk_group(api, "st")
    mk_recv(api, gid, {"email": mail("st")})
    mk_recv(api, gid, {"email": mail("st")})
    mk_recv(api, gid, {"email": mail("st"), "deactivated": now() - 60})
    r = api.get(f"/v3/groups/{gid}/stats")
    j = want_json(r, dict, "stats")
    for f in STAT_FIELDS:
        expect(f in j, f"stats lack {f!r} (wire.md Group stats)", r)
    for f in ("total_count", "inactive_count", "active_count", "bounce_count", "time", "order_count"):
        expect(is_int(j[f]), f"stats {f} must be an integer", r)
    expect(is_num(j["avg_points"]) and is_num(j["quality"]), "avg_points/quality must be numbers", r)
    expect(j["total_count"] == 3, "total_count should be 3", r)
    expect(j["active_count"] == 2, "active_count should be 2", r)
    expect(j["inactive_count"] == 1, "inactive_count should be 1 (one receiver created deactivated)", r)
    expect(j["bounce_count"] == 0, "bounce_count should be 0", r)


@check
def group_advancedstats(api):
    gid = mk_group(api, "ast")
    mk_recv(api, gid, {"email": mail("ast")})
    r = api.get(f"/v3/groups/{gid}/advancedstats")
    j = want(r)
    expect(j is not NO, "advancedstats must answer a JSON body", r)


@check
def group_clear(api):
    gid = mk_group(api, "clr")
    mk_recv(api, gid, {"email": mail("clr")})
    mk_recv(api, gid, {"email": mail("clr")})
    r = api.delete(f"/v3/groups/{gid}/clear")
    want(r)
    items, r = list_recv(api, gid)
    expect(items == [], "after clear the group must hold no receivers", r)
    r = api.get(f"/v3/groups/{gid}")
    check_group_obj(want(r), r)
    r = api.get(f"/v3/groups/{gid}/stats")
    j = want_json(r, dict, "stats")
    expect(j.get("total_count") == 0, "after clear total_count must be 0", r)


# ---- Receivers: create forms --------------------------------------------------------

@check
def receiver_create_with_postdata_wrapper(api):
    gid = mk_group(api, "rc")
    e = mail("wrap")
    x, r = mk_recv(api, gid, {"email": e, "source": "wrapped"})
    check_receiver_obj(x, r, e)
    y, r = get_recv(api, gid, x["id"])
    check_receiver_obj(y, r, e, gid)
    expect(y["source"] == "wrapped", "source must be stored", r)


@check
def receiver_create_without_wrapper(api):
    gid = mk_group(api, "rc")
    e = mail("flat")
    x, r = mk_recv(api, gid, {"email": e, "source": "flat"}, wrap=False)
    check_receiver_obj(x, r, e)
    y, r = get_recv(api, gid, x["id"])
    check_receiver_obj(y, r, e, gid)
    expect(y["source"] == "flat", "source must be stored", r)


@check
def receiver_create_json_without_content_type(api):
    gid = mk_group(api, "rc")
    e = mail("noct")
    x, r = mk_recv(api, gid, {"email": e, "source": "noct"}, ctype="none")
    y, r = get_recv(api, gid, x["id"])
    expect(y.get("email") == e and y.get("source") == "noct", "JSON body without content type must be accepted", r)


@check
def receiver_create_php_bracket_form(api):
    gid = mk_group(api, "php")
    aname = uniq("php")
    mk_attr(api, aname, "text", path=f"/v3/groups/{gid}/attributes")
    e = mail("php")
    raw = urllib.parse.urlencode([("email", e), ("source", "phpform"), (f"attributes[{aname}]", "7")])
    r = api.post(f"/v3/groups/{gid}/receivers", raw=raw, ctype="form")
    j = want(r)
    expect(isinstance(j, dict) and is_idstr(j.get("id")), "PHP bracket form create must answer the receiver", r)
    y, r = get_recv(api, gid, j["id"])
    expect(y.get("email") == e and y.get("source") == "phpform", "form fields must be stored", r)
    expect(isinstance(y.get("attributes"), dict) and y["attributes"].get(aname) == "7",
           f"attributes[{aname}]=7 must be stored as group attribute value \"7\"", r)


@check
def receiver_fields_and_timestamp_types(api):
    gid = mk_group(api, "rf")
    e = mail("rf")
    x, r = mk_recv(api, gid, {"email": e})
    y, r = get_recv(api, gid, x["id"])
    check_receiver_obj(y, r, e, gid)
    expect(y["deactivated"] == 0 and y["bounced"] == 0, "never-set timestamps must be integer 0 (wire.md)", r)
    for f in ("source", "last_location", "last_client"):
        expect(isinstance(y.get(f), str), f"receiver {f} must be a string (spec 2.7)", r)
    expect(is_num(y.get("points")), "receiver points must be a number (spec 2.7)", r)


# ---- Receivers: activation state table (spec section 3) ------------------------------

@check
def receiver_state_create_without_timestamps_is_active(api):
    gid = mk_group(api, "s")
    e = mail("s0")
    t0 = now()
    x, r = mk_recv(api, gid, {"email": e})
    y, r = get_recv(api, gid, x["id"])
    check_receiver_obj(y, r, e, gid)
    expect(y["active"] is True, "receiver created with no timestamps must be active (spec 3)", r)
    expect(abs(y["registered"] - t0) < 300 and abs(y["activated"] - t0) < 300,
           "registered and activated must be set to the current time (spec 3)", r)
    expect(y["deactivated"] == 0, "deactivated must be 0", r)
    type_membership(api, gid, e, present=("all", "active"), absent=("inactive",))


@check
def receiver_state_registered_only_awaits_activation(api):
    gid = mk_group(api, "s")
    e = mail("s1")
    reg = now() - 86400 * 3
    x, r = mk_recv(api, gid, {"email": e, "registered": reg})
    y, r = get_recv(api, gid, x["id"])
    check_receiver_obj(y, r, e, gid)
    expect(y["registered"] == reg, "registered must be stored as given", r)
    expect(y["activated"] == 0, "activated must stay 0 when only registered is given (spec 3)", r)
    expect(y["active"] is False, "receiver awaiting activation must not be active (spec 3)", r)
    type_membership(api, gid, e, present=("all",), absent=("active",))


@check
def receiver_state_activated_given_is_active(api):
    gid = mk_group(api, "s")
    e = mail("s2")
    reg, act = now() - 86400 * 5, now() - 86400 * 4
    x, r = mk_recv(api, gid, {"email": e, "registered": reg, "activated": act})
    y, r = get_recv(api, gid, x["id"])
    check_receiver_obj(y, r, e, gid)
    expect(y["activated"] == act and y["registered"] == reg, "given timestamps must be stored", r)
    expect(y["active"] is True, "activated given on create must make the receiver active (spec 3)", r)
    type_membership(api, gid, e, present=("all", "active"), absent=("inactive",))


@check
def receiver_state_deactivated_given_is_inactive(api):
    gid = mk_group(api, "s")
    e = mail("s3")
    de = now() - 3600
    x, r = mk_recv(api, gid, {"email": e, "deactivated": de})
    y, r = get_recv(api, gid, x["id"])
    check_receiver_obj(y, r, e, gid)
    expect(y["deactivated"] == de, "deactivated must be stored as given", r)
    expect(y["active"] is False, "deactivated non-zero on create must make the receiver inactive (spec 3)", r)
    type_membership(api, gid, e, present=("all", "inactive"), absent=("active",))


@check
def receiver_state_update_deactivated_zero_reactivates(api):
    gid = mk_group(api, "s")
    e = mail("s4")
    x, r = mk_recv(api, gid, {"email": e})
    rid = x["id"]
    r = api.put(f"/v3/groups/{gid}/receivers/{rid}", {"postdata": {"deactivated": now() - 10}})
    want(r)
    y, r = get_recv(api, gid, rid)
    expect(y.get("active") is False and y.get("deactivated") != 0,
           "setup: update with deactivated non-zero should make the receiver inactive", r)
    type_membership(api, gid, e, present=("inactive",), absent=("active",))
    r = api.put(f"/v3/groups/{gid}/receivers/{rid}", {"postdata": {"deactivated": 0}})
    want(r)
    y, r = get_recv(api, gid, rid)
    check_receiver_obj(y, r, e, gid)
    expect(y["deactivated"] == 0, "deactivated must be 0 after update", r)
    expect(y["activated"] != 0, "activated must still be set", r)
    expect(y["active"] is True, "update deactivated=0 of an activated receiver must make it active again (spec 3)", r)
    type_membership(api, gid, e, present=("active",), absent=("inactive",))


@check
def receiver_state_update_activated_activates(api):
    gid = mk_group(api, "s")
    e = mail("s5")
    x, r = mk_recv(api, gid, {"email": e, "registered": now() - 7200})
    rid = x["id"]
    y, r = get_recv(api, gid, rid)
    expect(y.get("active") is False, "setup: registered-only receiver must not be active", r)
    act = now() - 5
    r = api.put(f"/v3/groups/{gid}/receivers/{rid}", {"postdata": {"activated": act}})
    want(r)
    y, r = get_recv(api, gid, rid)
    check_receiver_obj(y, r, e, gid)
    expect(y["activated"] == act, "activated must be stored as given", r)
    expect(y["active"] is True, "update with activated must make the receiver active (spec 3)", r)
    type_membership(api, gid, e, present=("active",), absent=())


@check
def receiver_list_type_bounce(api):
    gid = mk_group(api, "b")
    eb, ea = mail("bounced"), mail("fine")
    mk_recv(api, gid, {"email": eb, "bounced": now() - 100})
    mk_recv(api, gid, {"email": ea})
    items, r = list_recv(api, gid, type="bounce")
    em = emails_of(items)
    expect(eb in em, "receiver with bounced set must be listed with type=bounce", r)
    expect(ea not in em, "receiver never bounced must not be listed with type=bounce", r)


# ---- Receivers: list queries --------------------------------------------------------

@check
def receiver_list_paging_zero_based(api):
    gid = mk_group(api, "pg")
    es = {mail("pg") for _ in range(5)}
    for e in sorted(es):
        mk_recv(api, gid, {"email": e})
    seen = []
    for page, n in ((0, 2), (1, 2), (2, 1), (3, 0)):
        items, r = list_recv(api, gid, pagesize=2, page=page)
        expect(len(items) == n, f"pagesize=2 page={page} (zero-based) should hold {n} items", r)
        seen += emails_of(items)
    expect(sorted(seen) == sorted(es), f"pages 0..3 must cover every receiver exactly once, got {seen}")


@check
def receiver_list_default_pagesize_50(api):
    gid = mk_group(api, "p50")
    for _ in range(52):
        mk_recv(api, gid, {"email": mail("p50")})
    items, r = list_recv(api, gid)
    expect(len(items) == 50, "default pagesize is 50 (spec 8)", r)
    items2, r = list_recv(api, gid, page=1)
    expect(len(items2) == 2, "page=1 with default pagesize should hold the remaining 2", r)


@check
def receiver_list_email_list_and_id_list(api):
    gid = mk_group(api, "el")
    rs = []
    for _ in range(4):
        e = mail("el")
        x, _r = mk_recv(api, gid, {"email": e})
        rs.append((e, x["id"]))
    items, r = list_recv(api, gid, email_list=f"{rs[0][0]},{rs[2][0]}")
    expect(sorted(emails_of(items)) == sorted([rs[0][0], rs[2][0]]), "email_list must filter to exactly those", r)
    items, r = list_recv(api, gid, id_list=f"{rs[1][1]},{rs[3][1]}")
    expect(sorted(emails_of(items)) == sorted([rs[1][0], rs[3][0]]), "id_list must filter to exactly those", r)


@check
def receiver_list_order_by(api):
    gid = mk_group(api, "ob")
    es = [f"tp{RUN}-ob{c}@example.com" for c in "cadb"]
    for e in es:
        mk_recv(api, gid, {"email": e})
    items, r = list_recv(api, gid, order_by="email desc")
    expect(emails_of(items) == sorted(es, reverse=True), "order_by=email desc must sort descending", r)
    items, r = list_recv(api, gid, order_by="email asc", auth="query")
    expect(emails_of(items) == sorted(es), "order_by=email asc must sort ascending", r)


@check
def receiver_list_detail_bits(api):
    gid = mk_group(api, "det")
    e = mail("det")
    tag = f"det{RUN}"
    order = {"order_id": "D-1", "product_id": "P-1", "product": "Sock", "price": 3.5,
             "currency": "EUR", "quantity": 1, "mailing_id": "1", "stamp": now() - 50}
    x, r = mk_recv(api, gid, {"email": e, "tags": [tag], "orders": [order]})
    for d, keys in ((None, ()), (0, ()), (1, ("events",)), (2, ("orders",)), (4, ("tags",)),
                    (7, ("events", "orders", "tags"))):
        params = {} if d is None else {"detail": d}
        items, r = list_recv(api, gid, **params)
        expect(len(items) == 1, "one receiver expected", r)
        it = items[0]
        for k in ("events", "orders", "tags"):
            if k in keys:
                expect(isinstance(it.get(k), list), f"detail={d}: {k} must be present as an array", r)
            else:
                expect(k not in it, f"detail={d}: {k} must not appear (wire.md: only when detail asks)", r)
        if "tags" in keys:
            expect(tag in it["tags"], f"detail={d}: tags must include {tag}", r)
        if "orders" in keys:
            expect(len(it["orders"]) == 1, f"detail={d}: the order must be listed", r)


@check
def receiver_orders_fields(api):
    gid = mk_group(api, "ord")
    e = mail("ord")
    st = now() - 1000
    o1 = {"order_id": f"O1-{RUN}", "product_id": "P-1", "product": "Shoe", "price": 19.99,
          "currency": "EUR", "quantity": 2, "mailing_id": "77", "stamp": st}
    o2 = {"order_id": f"O2-{RUN}", "product_id": "P-2", "product": "Hat", "price": 5,
          "currency": "USD", "amount": 3, "mailing_id": "78", "stamp": st + 1}
    mk_recv(api, gid, {"email": e, "orders": [o1, o2]})
    items, r = list_recv(api, gid, detail=2)
    expect(len(items) == 1 and isinstance(items[0].get("orders"), list), "orders must be listed with detail=2", r)
    orders = {o.get("order_id"): o for o in items[0]["orders"] if isinstance(o, dict)}
    expect(set(orders) == {o1["order_id"], o2["order_id"]}, "both orders must be listed", r)
    types = {"order_id": str, "product_id": str, "product": str, "currency": str, "mailing_id": str}
    for o in orders.values():
        for f in ("order_id", "product_id", "product", "price", "currency", "quantity", "mailing_id", "stamp"):
            expect(f in o, f"order lacks {f!r} (wire.md order fields)", r)
        for f, t in types.items():
            expect(isinstance(o[f], t), f"order {f} must be a string (spec 2.7)", r)
        expect(is_num(o["price"]), "order price must be a number", r)
        expect(is_int(o["quantity"]), "order quantity must be an integer", r)
        expect(is_int(o["stamp"]), "order stamp must be an integer timestamp", r)
    a = orders[o1["order_id"]]
    expect(a["product"] == "Shoe" and a["product_id"] == "P-1" and abs(a["price"] - 19.99) < 1e-6
           and a["currency"] == "EUR" and a["quantity"] == 2 and a["mailing_id"] == "77" and a["stamp"] == st,
           "order values must be read back as sent", r)
    b = orders[o2["order_id"]]
    expect(b["quantity"] == 3, "`amount` is an alias for quantity (wire.md)", r)


@check
def receiver_get_receivers_post(api):
    gid = mk_group(api, "gr")
    es = sorted(mail("gr") for _ in range(3))
    ids = []
    for e in es[:2]:
        x, _r = mk_recv(api, gid, {"email": e})
        ids.append(x["id"])
    x, _r = mk_recv(api, gid, {"email": es[2], "deactivated": now() - 10})
    ids.append(x["id"])
    r = api.post(f"/v3/groups/{gid}/get_receivers")
    j = want_json(r, list, "receiver list")
    expect(sorted(emails_of(j)) == es, "no body: all receivers", r)
    r = api.post(f"/v3/groups/{gid}/get_receivers", {"type": "active", "order_by": "email asc",
                                                     "pagesize": 1, "page": 1, "detail": 4})
    j = want_json(r, list, "receiver list")
    expect(emails_of(j) == [es[1]], "type=active, order_by email asc, pagesize 1, page 1 -> second active", r)
    expect(isinstance(j[0].get("tags"), list), "detail 4 must give tags", r)
    r = api.post(f"/v3/groups/{gid}/get_receivers", {"email_list": f"{es[0]},{es[2]}"})
    j = want_json(r, list, "receiver list")
    expect(sorted(emails_of(j)) == [es[0], es[2]], "email_list in body must filter", r)
    r = api.post(f"/v3/groups/{gid}/get_receivers", {"id_list": ids[1], "type": "all"})
    j = want_json(r, list, "receiver list")
    expect(emails_of(j) == [es[1]], "id_list in body must filter", r)
    r = api.post(f"/v3/groups/{gid}/get_receivers", {"type": "inactive"})
    j = want_json(r, list, "receiver list")
    expect(emails_of(j) == [es[2]], "type=inactive in body must filter", r)


@check
def receiver_list_json_suffix_paths(api):
    gid = mk_group(api, "js")
    e = mail("js")
    mk_recv(api, gid, {"email": e})
    for path in (f"/v3/groups.json/{gid}/receivers", f"/v3/groups.json/{gid}/receivers.json"):
        items, r = list_recv(api, gid, path=path)
        expect(emails_of(items) == [e], f"{path} must route like /v3/groups/{{id}}/receivers (wire.md)", r)


# ---- Receivers: path ids, update, delete ----------------------------------------------

@check
def receiver_path_id_number_raw_and_encoded_email(api):
    gid = mk_group(api, "pid")
    other = mk_group(api, "pid")
    e = mail("pid")
    x, r = mk_recv(api, gid, {"email": e})
    rid = x["id"]
    enc = urllib.parse.quote(e, safe="")
    for p in (rid, e, enc, rid + ".json"):
        y, r = get_recv(api, gid, p)
        expect(y.get("id") == rid and y.get("email") == e, f"receiver path id {p!r} must address the receiver", r)
    for p in (rid, e, enc):
        r = api.get(f"/v3/receivers/{p}", query={"group_id": gid})
        y = want_json(r, dict, "receiver")
        expect(y.get("id") == rid and y.get("email") == e, f"/v3/receivers/{p} must address the receiver", r)
    r = api.get(f"/v3/groups/{other}/receivers/{rid}")
    error_body(r, 404)


@check
def receiver_update_wrapped_and_unwrapped(api):
    gid = mk_group(api, "upd")
    e = mail("upd")
    x, r = mk_recv(api, gid, {"email": e, "source": "orig"})
    rid = x["id"]
    r = api.put(f"/v3/groups/{gid}/receivers/{rid}", {"postdata": {"source": "upd1"}})
    want(r)
    y, r = get_recv(api, gid, rid)
    expect(y.get("source") == "upd1", "update with postdata wrapper must be stored", r)
    r = api.put(f"/v3/groups/{gid}/receivers/{e}", {"source": "upd2"})
    want(r)
    y, r = get_recv(api, gid, rid)
    expect(y.get("source") == "upd2", "update without wrapper (path id as email) must be stored", r)


@check
def receiver_update_cannot_change_email(api):
    gid = mk_group(api, "em")
    e, e2 = mail("em"), mail("em2")
    x, r = mk_recv(api, gid, {"email": e})
    rid = x["id"]
    r = api.put(f"/v3/groups/{gid}/receivers/{rid}", {"postdata": {"email": e2, "source": "s"}})
    expect(r.status == 200 or 400 <= r.status < 500, "email change attempt must not cause a server error", r)
    y, r = get_recv(api, gid, rid)
    expect(y.get("email") == e, "the email cannot be changed on update (spec 2.7, 4.8)", r)
    r = api.get(f"/v3/groups/{gid}/receivers/{e2}")
    error_body(r, 404)


@check
def receiver_delete_in_group(api):
    gid = mk_group(api, "del")
    x, r = mk_recv(api, gid, {"email": mail("del")})
    r = api.delete(f"/v3/groups/{gid}/receivers/{x['id']}")
    expect(want(r) is True, "deletes answer true (wire.md)", r)
    r = api.get(f"/v3/groups/{gid}/receivers/{x['id']}")
    error_body(r, 404)


@check
def receiver_delete_global_with_and_without_group_id(api):
    gid = mk_group(api, "del")
    e1, e2 = mail("del"), mail("del")
    x1, _ = mk_recv(api, gid, {"email": e1})
    x2, _ = mk_recv(api, gid, {"email": e2})
    r = api.delete(f"/v3/receivers/{e1}", query={"group_id": gid})
    expect(want(r) is True, "deletes answer true (wire.md)", r)
    r = api.get(f"/v3/groups/{gid}/receivers/{x1['id']}")
    error_body(r, 404)
    r = api.delete(f"/v3/receivers/{x2['id']}")
    expect(want(r) is True, "deletes answer true (wire.md)", r)
    r = api.get(f"/v3/groups/{gid}/receivers/{x2['id']}")
    error_body(r, 404)
    items, r = list_recv(api, gid)
    expect(items == [], "deleted receivers must not be listed", r)


# ---- Attributes ------------------------------------------------------------------

@check
def attribute_global_create_and_get_all_types(api):
    for typ in ("text", "number", "gender", "date"):
        name = uniq("at")
        extra = {"description": "d " + typ, "preview_value": "pv", "default_value": "dv"}
        if typ == "date":
            extra["group_id"] = ""          # spec 2.6: empty group_id means global
        a, r = mk_attr(api, name, typ, **extra)
        attr_obj(a, r, name, typ, 0)
        r = api.get(f"/v3/attributes/{a['id']}")
        b = want(r)
        attr_obj(b, r, name, typ, 0)
        expect(b["id"] == a["id"] and b["description"] == "d " + typ and b["preview_value"] == "pv"
               and b["default_value"] == "dv", "stored fields must be read back", r)


@check
def attribute_global_list(api):
    a, _ = mk_attr(api)
    gid = mk_group(api, "al")
    g, _ = mk_attr(api, path=f"/v3/groups/{gid}/attributes")
    r = api.get("/v3/attributes")
    lst = want_json(r, list, "attribute list")
    ids = [x.get("id") for x in lst if isinstance(x, dict)]
    expect(a["id"] in ids, "global attribute must be listed", r)
    expect(g["id"] not in ids, "group attribute must not be listed without group_id (spec 4.6)", r)
    for x in lst:
        expect(isinstance(x, dict) and x.get("group_id") == 0, "global list items must have group_id 0", r)
    r = api.get("/v3/attributes", query={"group_id": gid})
    lst = want_json(r, list, "attribute list")
    expect(g["id"] in [x.get("id") for x in lst if isinstance(x, dict)],
           "GET /v3/attributes?group_id=G must list G's attribute", r)


@check
def attribute_update(api):
    a, _ = mk_attr(api, typ="text", description="d1", preview_value="p1")
    r = api.put(f"/v3/attributes/{a['id']}", {"type": "number", "description": "d2", "preview_value": "p2"})
    want(r)
    r = api.get(f"/v3/attributes/{a['id']}")
    b = want(r)
    attr_obj(b, r, a["name"], "number", 0)
    expect(b["description"] == "d2" and b["preview_value"] == "p2", "update must store description/preview_value", r)


@check
def attribute_name_not_updatable(api):
    a, _ = mk_attr(api)
    r = api.put(f"/v3/attributes/{a['id']}", {"name": uniq("renamed"), "description": "x"})
    expect(r.status == 200 or 400 <= r.status < 500, "must not be a server error", r)
    r = api.get(f"/v3/attributes/{a['id']}")
    b = want(r)
    expect(b.get("name") == a["name"], "attribute name is not updatable (spec 2.6)", r)


@check
def attribute_default_value_not_accepted_on_update(api):
    a, _ = mk_attr(api, default_value="keep")
    r = api.put(f"/v3/attributes/{a['id']}", {"default_value": "changed"})
    expect(r.status == 200 or 400 <= r.status < 500, "must not be a server error", r)
    r = api.get(f"/v3/attributes/{a['id']}")
    b = want(r)
    expect(b.get("default_value") == "keep", "default_value is not accepted on update (spec 2.6)", r)


@check
def attribute_delete(api):
    a, _ = mk_attr(api)
    r = api.delete(f"/v3/attributes/{a['id']}")
    expect(want(r) is True, "deletes answer true (wire.md)", r)
    r = api.get(f"/v3/attributes/{a['id']}")
    error_body(r, 404)
    r = api.get("/v3/attributes")
    lst = want_json(r, list, "attribute list")
    expect(a["id"] not in [x.get("id") for x in lst if isinstance(x, dict)], "deleted attribute must not be listed", r)


@check
def attribute_limits(api):
    r = api.get("/v3/attributes/limits")
    expect(want(r) is not NO, "limits must answer a JSON body", r)


@check
def attribute_existing_name_is_409(api):
    name = uniq("dup")
    mk_attr(api, name)
    r = api.post("/v3/attributes", {"name": name, "type": "text"})
    error_body(r, 409)
    gid = mk_group(api, "dup")
    gname = uniq("gdup")
    mk_attr(api, gname, path=f"/v3/groups/{gid}/attributes")
    r = api.post(f"/v3/groups/{gid}/attributes", {"name": gname, "type": "text"})
    error_body(r, 409)


@check
def attribute_global_endpoint_with_group_id(api):
    gid = mk_group(api, "ag")
    name = uniq("ag")
    a, r = mk_attr(api, name, "number", group_id=gid)
    attr_obj(a, r, name, "number", gid)
    r = api.get(f"/v3/groups/{gid}/attributes")
    lst = want_json(r, list, "group attribute list")
    expect(a["id"] in [x.get("id") for x in lst if isinstance(x, dict)],
           "attribute created with group_id must be a local attribute of that group", r)
    r = api.get("/v3/attributes")
    lst = want_json(r, list, "attribute list")
    expect(a["id"] not in [x.get("id") for x in lst if isinstance(x, dict)],
           "attribute created with group_id must not be global", r)


@check
def attribute_global_update_with_group_id(api):
    gid = mk_group(api, "agu")
    a, _ = mk_attr(api)
    r = api.put(f"/v3/attributes/{a['id']}", {"group_id": gid})
    want(r)
    r = api.get(f"/v3/attributes/{a['id']}")
    b = want(r)
    attr_obj(b, r, a["name"], None, gid)
    r = api.get(f"/v3/groups/{gid}/attributes")
    lst = want_json(r, list, "group attribute list")
    expect(a["id"] in [x.get("id") for x in lst if isinstance(x, dict)],
           "after PUT group_id the attribute must be local to that group (spec 2.6)", r)


@check
def attribute_group_endpoints(api):
    gid = mk_group(api, "ga")
    name = uniq("ga")
    a, r = mk_attr(api, name, "gender", path=f"/v3/groups/{gid}/attributes",
                   description="gd1", preview_value="m", default_value="f")
    attr_obj(a, r, name, "gender", gid)
    r = api.get(f"/v3/groups/{gid}/attributes", auth="query")
    lst = want_json(r, list, "group attribute list")
    mine = [x for x in lst if isinstance(x, dict) and x.get("id") == a["id"]]
    expect(len(mine) == 1, "group attribute must be listed", r)
    attr_obj(mine[0], r, name, "gender", gid)
    r = api.put(f"/v3/groups/{gid}/attributes/{a['id']}", {"description": "gd2", "preview_value": "f", "type": "text"})
    want(r)
    r = api.get(f"/v3/groups/{gid}/attributes")
    lst = want_json(r, list, "group attribute list")
    mine = [x for x in lst if isinstance(x, dict) and x.get("id") == a["id"]]
    expect(len(mine) == 1 and mine[0].get("description") == "gd2" and mine[0].get("preview_value") == "f"
           and mine[0].get("type") == "text", "group attribute update must be stored", r)
    r = api.delete(f"/v3/groups/{gid}/attributes/{a['id']}")
    expect(want(r) is True, "deletes answer true (wire.md)", r)
    r = api.get(f"/v3/groups/{gid}/attributes")
    lst = want_json(r, list, "group attribute list")
    expect(a["id"] not in [x.get("id") for x in lst if isinstance(x, dict)], "deleted attribute must not be listed", r)


@check
def attribute_set_value_via_group_endpoint(api):
    gid = mk_group(api, "av")
    name = uniq("shoesize")
    a, _ = mk_attr(api, name, "number", path=f"/v3/groups/{gid}/attributes")
    x, _ = mk_recv(api, gid, {"email": mail("av")})
    rid = x["id"]
    r = api.put(f"/v3/groups/{gid}/receivers/{rid}/attributes/{a['id']}", {"value": "44"})
    expect(want(r) is True, "PUT receiver attribute answers boolean true (spec 4.6)", r)
    y, r = get_recv(api, gid, rid)
    expect(isinstance(y.get("attributes"), dict) and y["attributes"].get(name) == "44",
           f"receiver attributes must hold {name}: \"44\" (values travel as strings, wire.md)", r)
    r = api.get(f"/v3/receivers/{rid}", query={"group_id": gid})
    y = want_json(r, dict, "receiver")
    expect(isinstance(y.get("attributes"), dict) and y["attributes"].get(name) == "44",
           "GET /v3/receivers/{id}?group_id must show the group attribute value", r)
    r = api.get(f"/v3/receivers/{rid}")
    y = want_json(r, dict, "receiver")
    expect(empty(y.get("attributes")),
           "without group_id group-specific parts are empty (spec 2.7)", r)


@check
def attribute_set_value_via_global_endpoint(api):
    gid = mk_group(api, "avg")
    name = uniq("birthday")
    a, _ = mk_attr(api, name, "date")
    x, _ = mk_recv(api, gid, {"email": mail("avg")})
    rid = x["id"]
    r = api.put(f"/v3/receivers/{rid}/attributes/{a['id']}", {"value": "1993-02-11"})
    expect(want(r) is True, "PUT receiver attribute answers boolean true (spec 4.6)", r)
    r = api.get(f"/v3/receivers/{rid}")
    y = want_json(r, dict, "receiver")
    expect(isinstance(y.get("global_attributes"), dict) and y["global_attributes"].get(name) == "1993-02-11",
           f"global_attributes must hold {name}: \"1993-02-11\"", r)
    y, r = get_recv(api, gid, rid)
    expect(isinstance(y.get("global_attributes"), dict) and y["global_attributes"].get(name) == "1993-02-11",
           "global attribute value must show when read in the group too", r)
    r = api.get(f"/v3/receivers/{rid}/attributes")
    j = want(r)
    expect(j is not NO and "1993-02-11" in json.dumps(j),
           "GET /v3/receivers/{id}/attributes must contain the value", r)


def _favour_setup(api):
    gid = mk_group(api, "fav")
    name = uniq("fav")
    mk_attr(api, name, "text")
    r = api.post(f"/v3/groups/{gid}/attributes", {"name": name, "type": "text"})
    want(r)   # a group attribute may share a global attribute's name (spec 2.6)
    e, e2 = mail("fav"), mail("fav")
    x, _ = mk_recv(api, gid, {"email": e, "attributes": {name: "L"}, "global_attributes": {name: "G"}})
    mk_recv(api, gid, {"email": e2, "attributes": {name: "G"}, "global_attributes": {name: "L"}})
    return gid, name, x, e, e2


@check
def attribute_group_and_global_of_same_name_coexist(api):
    gid, name, x, e, e2 = _favour_setup(api)
    y, r = get_recv(api, gid, x["id"])
    expect(isinstance(y.get("attributes"), dict) and y["attributes"].get(name) == "L"
           and isinstance(y.get("global_attributes"), dict) and y["global_attributes"].get(name) == "G",
           "group value (attributes) and global value (global_attributes) of the same name must both be stored", r)


@check
def attribute_group_favoured_over_global_in_filter_rule(api):
    gid, name, x, e, e2 = _favour_setup(api)
    for path in ("/v3/receivers/filter", "/v3/receivers.json/filter.json"):
        for cond, want_in in (("L", [e]), ("G", [e2])):
            r = api.post(path, {"groups": [gid], "rules": [{"field": name, "logic": "eq", "condition": cond}]})
            j = want_json(r, list, "filter result")
            expect(sorted(emails_of(j)) == sorted(want_in),
                   f"rule {name} eq {cond}: the group attribute is favoured over the global one (spec 2.6)", r)


# ---- Tags ------------------------------------------------------------------------

def tags_of(api, rid, origin="*", **kw):
    r = api.get(f"/v3/receivers/{rid}/tags", query={"origin": origin} if origin is not None else None, **kw)
    j = want_json(r, list, "tag list")
    for t in j:
        expect(isinstance(t, str), "tag lists are arrays of strings", r)
    return j, r


@check
def tag_normalisation(api):
    gid = mk_group(api, "tn")
    x, _ = mk_recv(api, gid, {"email": mail("tn")})
    rid = x["id"]
    R = RUN
    long_origin = "L" + R + "x" * 60
    cases = [
        (f"Shop{R}.Buyer!", f"Shop{R}.Buyer_"),
        (f"Müller{R}.Käufer-1", f"Müller{R}.Käufer-1"),
        (f"Grüße {R}", f"Grüße_{R}"),
        (f"Shop{R}.Sub.Tag", f"Shop{R}.Sub_Tag"),
        (f"My Shop{R}!.vip#1", f"My_Shop{R}_.vip_1"),
        (f"{long_origin}.long", f"{long_origin[:50]}.long"),
    ]
    r = api.post(f"/v3/receivers/{rid}/tags", {"tags": [c[0] for c in cases]})
    added = want_json(r, list, "added tags")
    for src, dst in cases:
        expect(dst in added, f"tag {src!r} must be normalised to {dst!r} (spec 2.8)", r)
    have, r = tags_of(api, rid)
    for src, dst in cases:
        expect(dst in have, f"receiver tags must contain {dst!r}", r)
        if src != dst:
            expect(src not in have, f"raw tag {src!r} must not be stored", r)


@check
def tag_add_reports_only_tags_actually_added(api):
    gid = mk_group(api, "ta")
    x, _ = mk_recv(api, gid, {"email": mail("ta")})
    t1, t2 = f"once{RUN}", f"twice{RUN}"
    r = api.post(f"/v3/receivers/{x['id']}/tags", {"tags": [t1]})
    expect(t1 in want_json(r, list, "added tags"), "first add must report the tag", r)
    r = api.post(f"/v3/receivers/{x['id']}/tags", {"tags": [t1, t2]})
    added = want_json(r, list, "added tags")
    expect(t2 in added and t1 not in added, "answer lists 'the tags actually added' (spec 4.9)", r)


@check
def tag_add_with_group(api):
    gid = mk_group(api, "tg")
    x, _ = mk_recv(api, gid, {"email": mail("tg")})
    rid = x["id"]
    t1, t2 = f"Grp{RUN}.one", f"Grp{RUN}.two"
    r = api.post(f"/v3/groups/{gid}/receivers/{rid}/tags", {"tags": [t1]})
    expect(t1 in want_json(r, list, "added tags"), "group tag endpoint must report the added tag", r)
    r = api.post(f"/v3/receivers/{rid}/tags", {"tags": [t2], "group_id": gid})
    expect(t2 in want_json(r, list, "added tags"), "tag endpoint with group_id must report the added tag", r)
    have, r = tags_of(api, rid, auth="header")
    expect(t1 in have and t2 in have, "both tags must be set", r)
    items, r = list_recv(api, gid, detail=4)
    expect(len(items) == 1 and t1 in items[0].get("tags", []) and t2 in items[0].get("tags", []),
           "tags must show on the receiver list with detail=4", r)


@check
def tag_account_list_origin_filter(api):
    gid = mk_group(api, "to")
    x, _ = mk_recv(api, gid, {"email": mail("to")})
    o, other = f"Org{RUN}", f"Oth{RUN}"
    ta, tb, tp = f"{o}.alpha", f"{other}.beta", f"plain{RUN}"
    r = api.post(f"/v3/receivers/{x['id']}/tags", {"tags": [ta, tb, tp]})
    want(r)

    def lst(origin):
        r = api.get("/v3/receivers/tags", query={"origin": origin})
        j = want_json(r, list, "tag list")
        return j, r

    def has(j, full, short):
        return full in j or short in j

    j, r = lst("*")
    expect(has(j, ta, "alpha") and has(j, tb, "beta") and tp in j, "origin=* must list tags of any origin", r)
    j, r = lst("")
    expect(tp in j, "blank origin must list tags without origin", r)
    expect(not has(j, ta, "alpha") and not has(j, tb, "beta"), "blank origin must not list tags with an origin", r)
    j, r = lst(o)
    expect(has(j, ta, "alpha"), f"origin={o} must list its tags", r)
    expect(not has(j, tb, "beta") and tp not in j, f"origin={o} must list only that origin", r)


@check
def tag_receiver_list_origin_filter(api):
    gid = mk_group(api, "tr")
    x, _ = mk_recv(api, gid, {"email": mail("tr")})
    o = f"Rorg{RUN}"
    ta, tb = f"{o}.a", f"plainr{RUN}"
    want(api.post(f"/v3/receivers/{x['id']}/tags", {"tags": [ta, tb]}))
    have, r = tags_of(api, x["id"], "*")
    expect(ta in have and tb in have, "origin=* must give all tags", r)
    have, r = tags_of(api, x["id"], o)
    expect((ta in have or "a" in have) and tb not in have, f"origin={o} must give only that origin's tags", r)


@check
def tag_minus_prefix_in_update_removes(api):
    gid = mk_group(api, "tm")
    x, _ = mk_recv(api, gid, {"email": mail("tm")})
    rid = x["id"]
    keep, drop = f"keep{RUN}", f"drop{RUN}"
    want(api.post(f"/v3/receivers/{rid}/tags", {"tags": [keep, drop]}))
    have, r = tags_of(api, rid)
    expect(drop in have, "setup: tag must be set", r)
    r = api.put(f"/v3/groups/{gid}/receivers/{rid}", {"postdata": {"tags": ["-" + drop]}})
    want(r)
    have, r = tags_of(api, rid)
    expect(drop not in have, "a tag prefixed with - in a tag list removes that tag (wire.md)", r)


# ---- Blacklist -------------------------------------------------------------------

def bl_get(api, e, **kw):
    return api.get(f"/v3/blacklist/{urllib.parse.quote(e, safe='')}", **kw)


@check
def blacklist_add_and_get_with_comment(api):
    e = mail("bl")
    r = api.post("/v3/blacklist", {"email": e, "comment": "spam trap"})
    want(r)
    r = api.get(f"/v3/blacklist/{e}")   # raw @ in the path
    j = want_json(r, dict, "blacklist entry")
    expect(j.get("email") == e and j.get("comment") == "spam trap", "entry must carry email and comment", r)
    expect(is_int(j.get("stamp")), "entry stamp must be an integer timestamp (wire.md Blacklist entry)", r)


@check
def blacklist_get_absent_is_404(api):
    r = bl_get(api, mail("absent"))
    error_body(r, 404)


@check
def blacklist_update_by_put(api):
    e = mail("blu")
    want(api.post("/v3/blacklist", {"email": e, "comment": "c1"}))
    r = api.put("/v3/blacklist", {"email": e, "comment": "c2"})
    want(r)
    r = bl_get(api, e)
    j = want_json(r, dict, "blacklist entry")
    expect(j.get("comment") == "c2", "PUT /v3/blacklist must update the comment by email", r)


@check
def blacklist_delete(api):
    e = mail("bld")
    want(api.post("/v3/blacklist", {"email": e}))
    r = api.delete(f"/v3/blacklist/{urllib.parse.quote(e, safe='')}")
    expect(want(r) is True, "deletes answer true (wire.md)", r)
    r = bl_get(api, e)
    error_body(r, 404)


@check
def blacklist_list(api):
    e = mail("bll")
    want(api.post("/v3/blacklist", {"email": e, "comment": "listed"}))
    r = api.get("/v3/blacklist", auth="query")
    j = want_json(r, list, "blacklist")
    expect(e in emails_of(j), "GET /v3/blacklist must list the entry", r)


@check
def blacklist_batch_few(api):
    es = [mail("blb") for _ in range(3)]
    r = api.post("/v3/blacklist/batch", {"items": [{"email": x, "comment": f"b{i}"} for i, x in enumerate(es)]})
    want(r)
    for i, x in enumerate(es):
        r = bl_get(api, x)
        j = want_json(r, dict, "blacklist entry")
        expect(j.get("email") == x and j.get("comment") == f"b{i}", "batch entry must be stored with comment", r)


@check
def blacklist_batch_php_bracket_form(api):
    es = [mail("blp") for _ in range(2)]
    raw = urllib.parse.urlencode([("items[0][email]", es[0]), ("items[0][comment]", "php"),
                                  ("items[1][email]", es[1])])
    r = api.post("/v3/blacklist/batch", raw=raw, ctype="form")
    want(r)
    r = bl_get(api, es[0])
    j = want_json(r, dict, "blacklist entry")
    expect(j.get("comment") == "php", "PHP bracket batch entry must be stored with comment", r)
    want(bl_get(api, es[1]))


@check
def blacklist_batch_1001_rejected_nothing_stored(api):
    es = [f"tp{RUN}-big{i}@example.com" for i in range(1001)]
    r = api.post("/v3/blacklist/batch", {"items": [{"email": x} for x in es]})
    expect(r.status in (400, 413), "a batch over 1,000 entries must be refused with 413 or 400 (spec 4.3, wire.md)", r)
    error_body(r, (400, 413))
    for i in (0, 500, 1000):
        r = bl_get(api, es[i])
        expect(r.status == 404, f"nothing of a refused batch may be stored (entry {i})", r)


@check
def blacklist_batch_1000_accepted(api):
    es = [f"tp{RUN}-k{i}@example.com" for i in range(1000)]
    r = api.post("/v3/blacklist/batch", {"items": [{"email": x} for x in es]})
    want(r)
    for i in (0, 999):
        want(bl_get(api, es[i]))


@check
def blacklist_validate_without_group(api):
    bl, ok_ = mail("vbl"), mail("vok")
    want(api.post("/v3/blacklist", {"email": bl}))
    r = api.post("/v3/blacklist/validate", {"emails": [bl, ok_]})
    j = want_json(r, list, "validate answer")
    expect(all(isinstance(x, str) for x in j), "validate answers an array of email strings", r)
    expect(sorted(j) == [ok_], "validate must answer exactly the emails not blacklisted", r)


@check
def blacklist_validate_with_group_counts_group_blocklist(api):
    gid = mk_group(api, "vg")
    bl, gb, ok_ = mail("vbl"), mail("vgb"), mail("vok")
    want(api.post("/v3/blacklist", {"email": bl}))
    want(api.post(f"/v3/groups/{gid}/blacklist", {"email": gb}))
    r = api.post("/v3/blacklist/validate", {"emails": [bl, gb, ok_], "group_id": gid})
    j = want_json(r, list, "validate answer")
    expect(sorted(j) == [ok_], "with group_id the group blocklist must count too (spec 4.3)", r)
    r = api.post("/v3/blacklist/validate", {"emails": [bl, gb, ok_]})
    j = want_json(r, list, "validate answer")
    expect(sorted(j) == sorted([gb, ok_]), "without group_id only the account blacklist counts", r)


@check
def group_blocklist_add_list_delete(api):
    gid = mk_group(api, "gbl")
    e = mail("gbl")
    r = api.post(f"/v3/groups/{gid}/blacklist", {"email": e})
    want(r)
    r = api.get(f"/v3/groups/{gid}/blacklist")
    j = want_json(r, list, "group blocklist")
    expect(e in emails_of(j), "group blocklist must list the entry", r)
    r = bl_get(api, e)
    expect(r.status == 404, "a group blocklist entry is not on the account blacklist", r)
    r = api.delete(f"/v3/groups/{gid}/blacklist/{urllib.parse.quote(e, safe='')}")
    expect(want(r) is True, "deletes answer true (wire.md)", r)
    r = api.get(f"/v3/groups/{gid}/blacklist")
    j = want_json(r, list, "group blocklist")
    expect(e not in emails_of(j), "deleted entry must not be listed", r)


# ---- Wire ------------------------------------------------------------------------

@check
def wire_404_error_body(api):
    r = api.get("/v3/groups/987654321098")
    error_body(r, 404)
    expect("application/json" in r.ctype.lower(), "error responses are application/json (wire.md)", r)
    gid = mk_group(api, "w404")
    r = api.get(f"/v3/groups/{gid}/receivers/{mail('nobody')}")
    error_body(r, 404)


@check
def wire_bad_json_is_400(api):
    r = api.post("/v3/groups", raw='{"name": "broken', ctype="json")
    error_body(r, 400)
    gid = mk_group(api, "bj")
    r = api.post(f"/v3/groups/{gid}/receivers", raw='{"postdata": {"email": ', ctype="json")
    error_body(r, 400)
    r = api.post("/oauth/token.php", raw='{"grant_type": ', ctype="json", auth="none")
    expect(r.status in (400, 401), "bad JSON at the token endpoint must be 400/401, never 500", r)


@check
def wire_json_labelled_form_urlencoded(api):
    name = uniq("lbl")
    r = api.post("/v3/groups", raw=json.dumps({"name": name}), ctype="form")
    g = want(r)
    check_group_obj(g, r, name)


@check
def wire_json_without_content_type(api):
    name = uniq("noct")
    r = api.post("/v3/groups", raw=json.dumps({"name": name, "backup": True}), ctype="none")
    g = want(r)
    check_group_obj(g, r, name)
    expect(g["backup"] is True, "backup must be stored", r)


@check
def wire_get_and_delete_with_empty_array_body(api):
    name = uniq("arr")
    gid = want(api.post("/v3/groups", {"name": name}))["id"]
    r = api.get(f"/v3/groups/{gid}", raw="[]", ctype="json")
    check_group_obj(want(r), r, name)
    r = api.delete(f"/v3/groups/{gid}", raw="[]", ctype="json")
    expect(want(r) is True, "DELETE with a [] body must work and answer true (wire.md)", r)


@check
def wire_xml_group_create_and_read(api):
    root = xml_root_name(api)
    name = uniq("xml")
    r = api.post("/v3/groups", raw=xml_body(root, {"name": name, "receiver_info": "xml info"}),
                 ctype="xml", accept="application/xml")
    expect(r.status == 200, "XML create must succeed", r)
    expect("xml" in r.ctype.lower() and r.xml is not None, "XML request with Accept xml must answer XML", r)
    gid = xtext(r.xml, "id")
    expect(gid is not None and re.fullmatch(r"[0-9]+", gid), "XML answer must carry <id>", r)
    expect(xtext(r.xml, "name") == name, "XML answer must carry <name>", r)
    r = api.get(f"/v3/groups/{gid}", accept="application/xml")
    expect(r.status == 200 and r.xml is not None and "xml" in r.ctype.lower(), "XML read must answer XML", r)
    expect(xtext(r.xml, "name") == name and xtext(r.xml, "receiver_info") == "xml info",
           "XML read must give the stored fields", r)
    r = api.get(f"/v3/groups/{gid}")
    g = want(r)
    check_group_obj(g, r, name)
    expect(g["receiver_info"] == "xml info", "the XML-created group must read back in JSON", r)


@check
def wire_xml_suffix_selects_xml(api):
    name = uniq("xsf")
    gid = want(api.post("/v3/groups", {"name": name}))["id"]
    r = api.get(f"/v3/groups/{gid}.xml")
    expect(r.status == 200 and "xml" in r.ctype.lower() and r.xml is not None, ".xml must select XML (wire.md)", r)
    expect(xtext(r.xml, "name") == name, "XML group must carry <name>", r)
    r = api.get("/v3/groups.xml")
    expect(r.status == 200 and r.xml is not None, "list via .xml must answer XML", r)
    expect(name in [e.text for e in r.xml.iter("name")], "XML group list must contain the group name", r)


@check
def wire_xml_receiver_create(api):
    root = xml_root_name(api)
    gid = mk_group(api, "xr")
    e = mail("xr")
    r = api.post(f"/v3/groups/{gid}/receivers", raw=xml_body(root, {"email": e, "source": "xmlsrc"}),
                 ctype="xml", accept="application/xml", auth="header")
    expect(r.status == 200 and r.xml is not None and "xml" in r.ctype.lower(), "XML receiver create must answer XML", r)
    expect(xtext(r.xml, "email") == e, "XML answer must carry <email>", r)
    items, r = list_recv(api, gid)
    expect(emails_of(items) == [e] and items[0].get("source") == "xmlsrc", "XML-created receiver must read back", r)


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--credentials", required=True)
    ap.add_argument("--code")
    ap.add_argument("--redirect-uri")
    ap.add_argument("--only", help="comma-separated check names (debugging aid)")
    ap.add_argument("--skip", help="comma-separated check names to leave out (endpoints not served yet)")
    args = ap.parse_args()
    with open(args.credentials) as f:
        creds = json.load(f)
    api = Api(creds)
    api.code = args.code
    api.redirect_uri = args.redirect_uri
    only = set(args.only.split(",")) if args.only else None
    passed = failed = 0
    for fn in CHECKS:
        name = fn.__name__
        if only and name not in only:
            continue
        if args.skip and name in args.skip.split(","):
            print(f"skip {name}: left out by --skip", file=sys.stderr)
            continue
        api.last = None
        try:
            res = fn(api)
            if res is SKIP:
                print(f"skip {name}: not applicable (e.g. no --code)", file=sys.stderr)
                continue
            print(f"ok   {name}")
            passed += 1
        except CheckFail as e:
            print(f"FAIL {name}: {api.redact(str(e))}")
            failed += 1
        except Exception as e:  # unexpected shape, connection error, ...
            tb = traceback.extract_tb(e.__traceback__)
            line = tb[-1].lineno if tb else "?"
            msg = f"{type(e).__name__}: {e} (script line {line})"
            if api.last is not None:
                msg += f" [last request: {api.last.desc()}]"
            print(f"FAIL {name}: {api.redact(msg)}")
            failed += 1
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 else 1)


if __name__ == "__main__":
    main()
