//! tfn: a compiler for a small tensor language.
