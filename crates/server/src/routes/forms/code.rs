//! The embed code of a form (`GET /v3/forms/{id}/code`): a working HTML
//! form posting to the public sign-up, `{base_url}/forms/{id}/submit`, with
//! an email field and one field per attribute the form asks for.
//!
//! The flags (spec §4.5): `embedded` gives a fragment to paste into a page
//! (otherwise a complete document), `css` adds a `<style>` scoped to the
//! form, `js` a small script that keeps the button from sending twice (the
//! form works without it), `badget` a "powered by" line.

use super::html::escape;
use listpipe_api::Attribute;
use listpipe_api::attribute::AttributeType;
use listpipe_api::form::{Form, FormCodeQuery};

const STYLE: &str = "<style>
.listpipe-form { max-width: 28rem; font-family: system-ui, sans-serif; }
.listpipe-form label { display: block; margin: .75rem 0 .25rem; font-weight: 600; }
.listpipe-form input { box-sizing: border-box; width: 100%; padding: .5rem; border: 1px solid #999; border-radius: 4px; }
.listpipe-form button { margin-top: 1rem; padding: .5rem 1.25rem; border: 0; border-radius: 4px; background: #1f6feb; color: #fff; cursor: pointer; }
.listpipe-form .listpipe-badge { margin-top: .75rem; font-size: .75rem; color: #666; }
</style>
";

/// The flags with the spec's defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CodeOptions {
    pub badget: bool,
    pub embedded: bool,
    pub js: bool,
    pub css: bool,
}

impl From<&FormCodeQuery> for CodeOptions {
    fn from(q: &FormCodeQuery) -> Self {
        CodeOptions {
            badget: q.badget.unwrap_or(false),
            embedded: q.embedded.unwrap_or(false),
            js: q.js.unwrap_or(true),
            css: q.css.unwrap_or(true),
        }
    }
}

fn field(form_id: i64, attr: &Attribute) -> String {
    let name = escape(&attr.name);
    let label = if attr.description.trim().is_empty() {
        name.clone()
    } else {
        escape(attr.description.trim())
    };
    let input_type = match AttributeType::parse(&attr.kind) {
        Some(AttributeType::Number) => "number\" step=\"any",
        Some(AttributeType::Date) => "date",
        _ => "text",
    };
    format!(
        "  <label for=\"listpipe-{form_id}-{name}\">{label}</label>\n  \
         <input id=\"listpipe-{form_id}-{name}\" type=\"{input_type}\" name=\"{name}\">\n"
    )
}

/// The embed code of `form` posting to `base_url`.
pub(super) fn render(
    form: &Form,
    fields: &[Attribute],
    base_url: &str,
    opts: CodeOptions,
) -> String {
    let id = form.id.0;
    let title = escape(if form.title.is_empty() {
        &form.name
    } else {
        &form.title
    });
    let action = escape(&format!(
        "{}/forms/{id}/submit",
        base_url.trim_end_matches('/')
    ));
    let mut html = String::new();
    html.push_str(&format!(
        "<form class=\"listpipe-form\" id=\"listpipe-form-{id}\" action=\"{action}\" method=\"post\" accept-charset=\"UTF-8\">\n  \
         <h2>{title}</h2>\n  \
         <label for=\"listpipe-{id}-email\">Email</label>\n  \
         <input id=\"listpipe-{id}-email\" type=\"email\" name=\"email\" required autocomplete=\"email\">\n"
    ));
    for attr in fields {
        html.push_str(&field(id, attr));
    }
    html.push_str("  <button type=\"submit\">Subscribe</button>\n");
    if opts.badget {
        html.push_str("  <p class=\"listpipe-badge\">Powered by listpipe</p>\n");
    }
    html.push_str("</form>\n");
    if opts.js {
        html.push_str(&format!(
            "<script>\n(function () {{\n  var form = document.getElementById(\"listpipe-form-{id}\");\n  \
             if (!form) return;\n  form.addEventListener(\"submit\", function () {{\n    \
             var button = form.querySelector(\"button[type=submit]\");\n    \
             if (button) button.disabled = true;\n  }});\n}})();\n</script>\n"
        ));
    }
    let style = if opts.css { STYLE } else { "" };
    if opts.embedded {
        return format!("{style}{html}");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n{style}</head>\n<body>\n{html}</body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Form {
        Form {
            id: 7.into(),
            name: "news".into(),
            title: "Our <News>".into(),
            customer_tables_id: 3.into(),
            ..Default::default()
        }
    }

    #[test]
    fn code_is_a_form_posting_to_the_submit_url_with_a_field_per_attribute() {
        let attr = Attribute {
            name: "age".into(),
            kind: "number".into(),
            ..Default::default()
        };
        let opts = CodeOptions {
            badget: false,
            embedded: true,
            js: false,
            css: false,
        };
        let code = render(&form(), &[attr], "http://h:1/", opts);
        assert!(code.starts_with("<form class=\"listpipe-form\" id=\"listpipe-form-7\" action=\"http://h:1/forms/7/submit\" method=\"post\""), "{code}");
        assert!(code.contains("<h2>Our &lt;News&gt;</h2>"), "{code}");
        assert!(
            code.contains("type=\"email\" name=\"email\" required"),
            "{code}"
        );
        assert!(
            code.contains("type=\"number\" step=\"any\" name=\"age\""),
            "{code}"
        );
        assert!(
            !code.contains("<script>") && !code.contains("<style>") && !code.contains("Powered")
        );
    }

    #[test]
    fn defaults_give_a_whole_document_with_style_and_script() {
        let opts = CodeOptions::from(&FormCodeQuery::default());
        let code = render(&form(), &[], "http://h:1", opts);
        assert!(code.starts_with("<!DOCTYPE html>"), "{code}");
        assert!(
            code.contains("<style>") && code.contains("<script>"),
            "{code}"
        );
        assert!(!code.contains("Powered by"), "{code}");
    }
}
