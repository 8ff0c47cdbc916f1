//! Which tool wrote the file, known by its headers: the tools whose exports have a preset,
//! and the tools that write dates month first.

/// What another tool's export looks like: every header of `all` present (any case) means
/// the file is that tool's export and the preset reads it.
pub struct ToolExport {
    pub preset: &'static str,
    pub all: &'static [&'static str],
}

/// Tools whose exports have a preset; the first row that fits wins, so the more specific
/// signatures come first.
pub const TOOL_EXPORTS: &[ToolExport] = &[
    ToolExport {
        preset: "shopify-orders",
        all: &["Email", "Name", "Lineitem name", "Financial Status"],
    },
    ToolExport {
        preset: "shopify-customers",
        all: &["Email", "Accepts Email Marketing"],
    },
    ToolExport {
        preset: "shopify-customers",
        all: &["Email", "Accepts Marketing", "Total Spent"],
    },
    ToolExport {
        preset: "mailchimp",
        all: &["Email Address", "MEMBER_RATING", "OPTIN_TIME"],
    },
    ToolExport {
        preset: "brevo",
        all: &["EMAIL", "ADDED_TIME", "MODIFIED_TIME"],
    },
    ToolExport {
        preset: "hubspot",
        all: &["Email", "Lifecycle Stage", "Create Date"],
    },
    ToolExport {
        preset: "hubspot",
        all: &["Email", "Marketing contact status"],
    },
];

/// Tools that write dates month first (`5/6/2012` is May 6), known by their headers: every
/// header of one `all` present (normalised) means the file is that tool's export. A date
/// column of such a file that reads both ways is read month first.
pub struct MonthFirstTool {
    pub tool: &'static str,
    pub all: &'static [&'static str],
}

/// US systems whose exports write month first.
pub const MONTH_FIRST_TOOLS: &[MonthFirstTool] = &[
    MonthFirstTool {
        tool: "Magento",
        all: &["Customer Since", "Web Site"],
    },
    MonthFirstTool {
        tool: "Magento",
        all: &["Account Created in"],
    },
    MonthFirstTool {
        tool: "Magento",
        all: &["email", "_website", "_store"],
    },
    MonthFirstTool {
        tool: "Magento",
        all: &["email", "website_id", "created_in"],
    },
    MonthFirstTool {
        tool: "Shopify",
        all: &["Accepts Email Marketing"],
    },
    MonthFirstTool {
        tool: "Shopify",
        all: &["Accepts Marketing", "Total Spent"],
    },
    MonthFirstTool {
        tool: "Shopify",
        all: &["Lineitem name", "Financial Status"],
    },
    MonthFirstTool {
        tool: "WooCommerce",
        all: &["billing_email", "billing_first_name"],
    },
    MonthFirstTool {
        tool: "WooCommerce",
        all: &["_billing_email"],
    },
    MonthFirstTool {
        tool: "WooCommerce",
        all: &["Billing Email Address", "Order Number"],
    },
    MonthFirstTool {
        tool: "HubSpot",
        all: &["Lifecycle Stage", "Create Date"],
    },
    MonthFirstTool {
        tool: "HubSpot",
        all: &["Record ID", "Contact owner"],
    },
];
