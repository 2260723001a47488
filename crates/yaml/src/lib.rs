//! YAML reading and surgical writing: the span tree, values, renderers and the editor.

pub mod block;
mod decode;
pub mod edit;
pub mod emit;
pub mod hash;
pub mod patch;
pub mod quick;
pub mod skim;
pub mod tree;
pub mod value;

pub use block::BlockStyle;
pub use edit::{Edit, EditError, Editor, Flavor, Placement};
pub use patch::Patch;
pub use tree::{Kind, NodeId, Style, SyntaxError, Tree};
pub use value::Value;
