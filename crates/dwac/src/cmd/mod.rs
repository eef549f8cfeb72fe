//! One module per subcommand.

pub(crate) mod bench;
pub(crate) mod check;
pub(crate) mod compile;
pub(crate) mod inspect;
pub(crate) mod mask;
pub(crate) mod tools;
