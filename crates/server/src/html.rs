//! HTML escaping for every value put into a page the server answers (forms,
//! embed code, the authorize page): the workspace's one escaper.

pub use listpipe_base::html::escape;
