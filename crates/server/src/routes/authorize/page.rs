//! The HTML of the authorization page: one small, self-contained document
//! (inline CSS, no script, no external assets) that reads well with a
//! screen reader and a keyboard. Every value from the request is escaped.

use crate::html::escape;
/// What the login-and-approve form shows and carries.
pub(super) struct LoginForm<'a> {
    pub app_name: &'a str,
    pub account_name: &'a str,
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    pub response_type: &'a str,
    pub state: Option<&'a str>,
    pub csrf: &'a str,
    /// The email typed before, kept after a failed attempt.
    pub email: &'a str,
    /// Why the last attempt failed; shown above the form.
    pub error: Option<&'a str>,
}

const STYLE: &str = "
:root { color-scheme: light dark; font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; }
body { margin: 0; padding: 2rem 1rem; background: Canvas; color: CanvasText; }
main { max-width: 26rem; margin: 0 auto; padding: 1.5rem; border: 1px solid GrayText; border-radius: .5rem; }
h1 { font-size: 1.4rem; margin: 0 0 1rem; }
p { line-height: 1.5; }
.note { font-size: .9rem; overflow-wrap: anywhere; }
.error { border-left: .3rem solid #b3261e; padding: .5rem .75rem; background: color-mix(in srgb, #b3261e 12%, Canvas); }
label { display: block; margin: 1rem 0 .25rem; font-weight: 600; }
input { box-sizing: border-box; width: 100%; padding: .5rem; font: inherit; }
.actions { display: flex; gap: .75rem; margin-top: 1.5rem; flex-wrap: wrap; }
button { font: inherit; padding: .55rem 1.1rem; border-radius: .35rem; border: 1px solid GrayText; cursor: pointer; }
button.primary { background: #1d4ed8; border-color: #1d4ed8; color: #fff; }
:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
";

fn document(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(title)
    )
}

fn hidden(name: &str, value: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"{name}\" value=\"{}\">\n",
        escape(value)
    )
}

/// The login-and-approve page.
pub(super) fn login(f: &LoginForm) -> String {
    let app = escape(f.app_name);
    let mut body = format!(
        "<h1>Approve access for {app}</h1>\n\
         <p><strong>{app}</strong> asks for access to the account <strong>{}</strong>. \
         If you approve, it can read and change all of the account's data through the API.</p>\n\
         <p class=\"note\">After you answer you will be sent back to <code>{}</code>.</p>\n",
        escape(f.account_name),
        escape(f.redirect_uri),
    );
    let invalid = if let Some(error) = f.error {
        body.push_str(&format!(
            "<p class=\"error\" id=\"error\" role=\"alert\">{}</p>\n",
            escape(error)
        ));
        " aria-invalid=\"true\" aria-describedby=\"error\""
    } else {
        ""
    };
    // No action: the form posts back to this page's own address.
    body.push_str("<form method=\"post\">\n");
    body.push_str(&hidden("client_id", f.client_id));
    body.push_str(&hidden("redirect_uri", f.redirect_uri));
    body.push_str(&hidden("response_type", f.response_type));
    if let Some(state) = f.state {
        body.push_str(&hidden("state", state));
    }
    body.push_str(&hidden("csrf", f.csrf));
    body.push_str(&format!(
        "<label for=\"email\">Email</label>\n\
         <input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"username\" required \
         value=\"{}\"{invalid}{}>\n\
         <label for=\"password\">Password</label>\n\
         <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required{invalid}{}>\n\
         <div class=\"actions\">\n\
         <button class=\"primary\" type=\"submit\" name=\"decision\" value=\"approve\">Log in and approve</button>\n\
         <button type=\"submit\" name=\"decision\" value=\"deny\" formnovalidate>Deny</button>\n\
         </div>\n</form>\n",
        escape(f.email),
        if f.email.is_empty() { " autofocus" } else { "" },
        if f.email.is_empty() { "" } else { " autofocus" },
    ));
    document(&format!("Approve access for {}", f.app_name), &body)
}

/// A page that explains why nothing happens (no redirect).
pub(super) fn problem(title: &str, message: &str) -> String {
    let body = format!(
        "<h1>{}</h1>\n<p role=\"alert\">{}</p>\n\
         <p class=\"note\">Nothing was sent to the application. Go back to it and start again.</p>\n",
        escape(title),
        escape(message)
    );
    document(title, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_values_cannot_break_out_of_the_markup() {
        let page = login(&LoginForm {
            app_name: "<script>alert(1)</script>",
            account_name: "a&b",
            client_id: "c\"><img src=x>",
            redirect_uri: "https://app.example/cb?a=1&b='2'",
            response_type: "code",
            state: Some("\"onfocus=\"x"),
            csrf: "1.ab",
            email: "",
            error: Some("<b>bad</b>"),
        });
        assert!(!page.contains("<script>") && !page.contains("<img") && !page.contains("<b>"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("value=\"&quot;onfocus=&quot;x\""));
        assert!(page.contains("https://app.example/cb?a=1&amp;b=&#39;2&#39;"));
    }
}
