//! Formats: which documents are pipelines, which of their parts become pods
//! (components), what those are called, where their scheduling is read and
//! written. One module per row of SPEC §2.

pub mod argo;
pub mod kfp_v2;
mod object;
pub mod pipeline_pod;
pub mod pipeline_version;
mod pod_spec_patch;
mod podspec;
mod view;

pub use view::{TreeNode, View};
pub(crate) use view::{
    alias_refusal, at, at_node, field, field_no_alias, field_own, field_str, push_unique,
};
pub mod workload;

use std::sync::Arc;

use crate::matching::Subject;
use crate::scheduling::{Changed, Sched, Shape, Target as SchedTarget};
use kfsched_yaml::edit::{Edit, Flavor};
use kfsched_yaml::tree::{Kind, NodeId, Tree};
use kfsched_yaml::value::Value;

/// A unit of a document that becomes one pod.
#[derive(Clone, Debug)]
pub struct Component {
    /// The document kind (`PipelineSpec`, `Workflow`, `Deployment`, ...).
    pub kind: String,
    /// The top-level pipeline's names (a PipelineVersion has two: its
    /// `spec.pipelineName` and its IR's `pipelineInfo.name`); none for plain
    /// workloads.
    pub pipelines: Vec<String>,
    /// Every name the component answers to, task paths included.
    pub names: Vec<String>,
    /// Main container images.
    pub images: Vec<String>,
    /// A KFP v2 task's path from the root DAG (`outer/train`): with the
    /// pipeline name, what identifies its pods at admission. A pipeline's
    /// pod has the path admission reads from it, whatever its format.
    pub task_path: Option<String>,
    /// What pod it stands for: `Some(Executor)` for a file's component; a
    /// pipeline's pod read as admission reads it says its own.
    pub role: Option<crate::matching::PodRole>,
    /// How messages name it: `task "train" (root/train)`.
    pub label: String,
    /// Where its scheduling lives.
    pub place: Place,
}

impl Component {
    /// What rules match the component on.
    pub(crate) fn subject(&self) -> Subject<'_> {
        Subject {
            names: &self.names,
            images: &self.images,
            pipelines: &self.pipelines,
            kind: &self.kind,
            role: self.role,
        }
    }
}

/// Where a component's scheduling lives in the tree.
#[derive(Clone, Debug)]
pub enum Place {
    /// A KFP v2 task: its executor label.
    KfpV2 { executor: String },
    /// An Argo template (a mapping node) of a workflow.
    Argo { template: NodeId, workflow: usize },
    /// A workload's pod template.
    Workload(workload::PodTemplate),
}

/// A component that is not a pod, listed by `explain`.
#[derive(Clone, Debug)]
pub struct Skipped {
    pub label: String,
    pub reason: String,
}

/// What a document is.
#[derive(Clone, Debug)]
pub enum Doc {
    KfpV2(kfp_v2::Pipeline),
    Argo(argo::Workflow),
    Workload(workload::Workload),
    /// The KFP v2 platform document that belongs to the pipeline document before it.
    KfpV2Platform,
    /// Not a pipeline: skipped.
    Other(String),
    /// A `v1 List` (`kubectl get -o yaml|json` of several objects) holding
    /// workloads or workflows: each item is read and written like a
    /// document of its own.
    List(List),
}

/// The items of a `v1 List`, detected like the documents of a file.
#[derive(Clone, Debug)]
pub struct List {
    /// What each item is. KFP v2 IR is not a Kubernetes object and is
    /// never an item: such an item is [`Doc::Other`].
    pub items: Vec<Doc>,
    /// The root node of each item.
    pub roots: Vec<Option<NodeId>>,
}

impl Doc {
    pub(crate) fn format_name(&self) -> &'static str {
        match self {
            Doc::KfpV2(p) if p.manifest.is_some() => "KFP manifest",
            Doc::KfpV2(_) => "KFP v2 IR",
            Doc::Argo(w) if w.kfp_v1 => "KFP v1 (Argo)",
            Doc::Argo(_) => "Argo",
            Doc::Workload(w) if w.pipeline_pod.is_some() => "pipeline pod",
            Doc::Workload(_) => "workload",
            Doc::KfpV2Platform => "KFP v2 platform spec",
            Doc::List(_) => "v1 List",
            Doc::Other(_) => "other",
        }
    }

    pub fn components(&self) -> &[Component] {
        match self {
            Doc::KfpV2(p) => &p.components,
            Doc::Argo(w) => &w.components,
            Doc::Workload(w) => std::slice::from_ref(&w.component),
            _ => &[],
        }
    }

    fn components_mut(&mut self) -> &mut [Component] {
        match self {
            Doc::KfpV2(p) => &mut p.components,
            Doc::Argo(w) => &mut w.components,
            Doc::Workload(w) => std::slice::from_mut(&mut w.component),
            _ => &mut [],
        }
    }

    /// The controller that manages the object, when it has one: it makes
    /// the object from its own template, so that is what to rewrite.
    pub fn owner(&self) -> Option<&(String, NodeId)> {
        match self {
            Doc::Argo(w) => w.owner.as_ref(),
            Doc::Workload(w) => w.owner.as_ref(),
            Doc::KfpV2(p) => p.manifest.as_ref().and_then(|m| m.owner.as_ref()),
            _ => None,
        }
    }

    /// What the document is, for messages about it as a whole.
    pub fn label(&self) -> String {
        match self {
            Doc::Argo(w) => {
                let name = match &w.name {
                    Some(n) => format!("{} {n:?}", w.kind),
                    None => w.kind.clone(),
                };
                match w.item {
                    Some(i) => format!("{name} (item {i})"),
                    None => name,
                }
            }
            Doc::Workload(w) => w.component.label.clone(),
            Doc::KfpV2(p) => match p.manifest.as_ref().and_then(|m| m.name.as_ref()) {
                Some(n) => format!("PipelineVersion {n:?}"),
                None => self.format_name().to_string(),
            },
            _ => self.format_name().to_string(),
        }
    }

    pub fn skipped(&self) -> &[Skipped] {
        match self {
            Doc::KfpV2(p) => &p.skipped,
            Doc::Argo(w) => &w.skipped,
            _ => &[],
        }
    }

    /// The flavour of text that edits of this document are written in.
    /// `style` is the file's detected indentation, for hand-written documents.
    pub fn flavor(&self, style: kfsched_yaml::BlockStyle) -> Flavor {
        match self {
            Doc::KfpV2(p) if p.sdk => Flavor::KfpV2,
            Doc::Argo(w) if w.kfp_v1 => Flavor::KfpV1,
            _ => Flavor::Generic(style),
        }
    }

    pub fn shape(&self) -> Shape {
        match self {
            Doc::KfpV2(_) => Shape::KfpV2,
            _ => Shape::K8s,
        }
    }

    pub(crate) fn sched_target(&self) -> SchedTarget {
        match self {
            Doc::KfpV2(_) => SchedTarget::KfpV2Executor,
            _ => SchedTarget::Kubernetes,
        }
    }

    /// Why a change cannot be written to a component, when it cannot (the
    /// node the problem is at, and what to do): an Argo template's
    /// podSpecPatch that kfsched cannot add to.
    pub(crate) fn write_refusal(
        &self,
        tree: &Tree,
        c: &Component,
        changed: Changed,
    ) -> Option<(NodeId, String)> {
        match (self, &c.place) {
            (Doc::Argo(w), Place::Argo { template, .. }) => {
                w.write_refusal(tree, *template, changed)
            }
            _ => None,
        }
    }

    /// The scheduling a component has now. Its pod labels and annotations
    /// only with `metadata`: a KFP v1 template's annotations hold its whole
    /// component spec, which no rule changes unless it sets pod metadata.
    pub fn read(&self, tree: &Tree, c: &Component, metadata: bool) -> Sched {
        match (self, &c.place) {
            (Doc::KfpV2(p), Place::KfpV2 { executor }) => p.read_executor(tree, executor),
            (Doc::Argo(w), Place::Argo { template, .. }) => w.read(tree, *template, metadata),
            (Doc::Workload(_), Place::Workload(pt)) => workload::read(tree, pt, metadata),
            _ => Sched::default(),
        }
    }
}

/// Whether the file was written by kubectl or kustomize (Go YAML) rather
/// than by PyYAML: the first quoted scalar that would read as another type
/// unquoted tells, as go-yaml double-quotes such a string (`"600"`) where
/// PyYAML single-quotes it (`'600'`). `false` when no scalar tells.
pub(crate) fn written_by_go(tree: &Tree) -> bool {
    use kfsched_yaml::tree::Style;
    use kfsched_yaml::value::{Resolved, resolve_plain};
    for id in 0..tree.len() as NodeId {
        let n = tree.node(id);
        if n.kind != Kind::Scalar || !n.style.is_quoted() {
            continue;
        }
        if resolve_plain(tree.scalar(id)) == Resolved::Str {
            continue;
        }
        match n.style {
            Style::SingleQuoted => return false,
            Style::DoubleQuoted if !tree.src()[n.start as usize..n.end as usize].contains('\\') => {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// A changed component, ready to be written.
pub struct Change<'c> {
    pub component: &'c Component,
    /// The scheduling the file has, kept only for the formats that write
    /// from it ([`Doc::writes_from_before`]): a KFP v2 document writes
    /// from `after` alone, and holding thousands of these unused was a
    /// third of a large pipeline's peak memory.
    before: Option<Box<Sched>>,
    /// Shared: the components that had no scheduling and that the same
    /// rules select share one result (see `plan`).
    pub after: Arc<Sched>,
    pub changed: Changed,
}

impl<'c> Change<'c> {
    /// The change of `component` in `doc` from `before` to `after`.
    pub fn new(
        doc: &Doc,
        component: &'c Component,
        before: Sched,
        after: Arc<Sched>,
        changed: Changed,
    ) -> Change<'c> {
        Change {
            component,
            before: doc.writes_from_before().then(|| Box::new(before)),
            after,
            changed,
        }
    }

    /// The scheduling the file has (for the formats that write from it).
    pub fn before(&self) -> &Sched {
        static NONE: std::sync::OnceLock<Sched> = std::sync::OnceLock::new();
        self.before
            .as_deref()
            .unwrap_or_else(|| NONE.get_or_init(Sched::default))
    }
}

/// Detects every document of a file. `Err` carries a message and the node it is about.
pub fn detect(tree: &Tree) -> Result<Vec<Doc>, (NodeId, String)> {
    let roots: Vec<Option<NodeId>> = tree.documents.iter().map(|d| d.root).collect();
    detect_roots(tree, &roots)
}

/// Detects what each of a sequence of root nodes is: the documents of a
/// file, or the items of a KRM ResourceList.
/// Detects the format of `roots`, the documents of `tree` from its first.
pub(crate) fn detect_roots(
    tree: &Tree,
    roots: &[Option<NodeId>],
) -> Result<Vec<Doc>, (NodeId, String)> {
    detect_roots_from(tree, roots, 0)
}

/// Detects the format of `roots`, the documents `first..` of `tree`.
pub(crate) fn detect_roots_from(
    tree: &Tree,
    roots: &[Option<NodeId>],
    first: usize,
) -> Result<Vec<Doc>, (NodeId, String)> {
    let mut docs = Vec::with_capacity(roots.len());
    let mut last_pipeline: Option<usize> = None;
    for (i, d) in roots.iter().enumerate() {
        let Some(root) = *d else {
            docs.push(Doc::Other("empty document".into()));
            continue;
        };
        if tree.kind(root) != Kind::Map {
            docs.push(Doc::Other("not a mapping".into()));
            continue;
        }
        let has = |k: &str| tree.get_value(root, k).is_some();
        if has("pipelineInfo") && has("root") && has("deploymentSpec") {
            let platform = roots.get(i + 1).copied().flatten().filter(|&r| {
                tree.kind(r) == Kind::Map
                    && tree.get_value(r, "platforms").is_some()
                    && tree.get_value(r, "pipelineInfo").is_none()
            });
            let next = first + i + 1;
            docs.push(Doc::KfpV2(kfp_v2::Pipeline::parse(
                TreeNode { tree, id: root },
                (next < tree.documents.len()).then_some(next),
                platform,
            )));
            last_pipeline = Some(i);
            continue;
        }
        if has("platforms") && last_pipeline == Some(i.wrapping_sub(1)) {
            docs.push(Doc::KfpV2Platform);
            continue;
        }
        let api = tree
            .get_value(root, "apiVersion")
            .and_then(|v| tree.str_value(v))
            .unwrap_or("");
        let kind = tree
            .get_value(root, "kind")
            .and_then(|v| tree.str_value(v))
            .unwrap_or("");
        if api.starts_with("argoproj.io/") && argo::KINDS.contains(&kind) {
            docs.push(Doc::Argo(argo::Workflow::parse(tree, i, root, kind)?));
            continue;
        }
        if !api.is_empty() && workload::KINDS.contains(&kind) {
            match workload::Workload::parse(tree, root, kind)? {
                Some(w) => docs.push(Doc::Workload(w)),
                None => docs.push(Doc::Other(format!("{kind} without a pod template"))),
            }
            continue;
        }
        if api.starts_with("pipelines.kubeflow.org/") {
            docs.push(pipeline_version::detect(tree, root, kind)?);
            continue;
        }
        if api == "v1" && kind == "List" {
            if let Some(list) = List::parse(tree, root)? {
                docs.push(Doc::List(list));
                continue;
            }
        }
        if api == crate::discover::POLICY_API_VERSION && kind == crate::discover::POLICY_KIND {
            docs.push(Doc::Other(
                "a SchedulingPolicy, kfsched's policy and not a pipeline: pass it with -p POLICY, and the pipelines as inputs".into(),
            ));
            continue;
        }
        let what = match (api.is_empty(), kind.is_empty()) {
            (_, true) => "no apiVersion/kind".to_string(),
            (true, false) => kind.to_string(),
            (false, false) => format!("{api} {kind}"),
        };
        docs.push(Doc::Other(format!("not a pipeline ({what})")));
    }
    Ok(docs)
}

impl List {
    /// The items of a `v1 List` document, or `None` when none of them is a
    /// workload or workflow (a List of ConfigMaps is not a pipeline).
    fn parse(tree: &Tree, root: NodeId) -> Result<Option<List>, (NodeId, String)> {
        let Some(items) = field_no_alias(tree, root, "items", "the List's items")?
            .filter(|&i| tree.kind(i) == Kind::Seq)
        else {
            return Ok(None);
        };
        let roots: Vec<Option<NodeId>> = tree.items(items).map(Some).collect();
        // Items are numbered from 0 in their own list: no KFP v2 platform
        // document can follow one.
        let mut docs = detect_roots_from(tree, &roots, tree.documents.len())?;
        for (i, d) in docs.iter_mut().enumerate() {
            let ir = match d {
                Doc::KfpV2(p) => p.manifest.is_none(),
                Doc::KfpV2Platform => true,
                _ => false,
            };
            if ir {
                *d = Doc::Other("KFP v2 IR, which is not a Kubernetes object".into());
            }
            // Items may share a name (`kubectl get -A` of several
            // namespaces): messages say which item.
            for c in d.components_mut() {
                c.label = format!("{} (item {})", c.label, i + 1);
            }
            if let Doc::Argo(w) = d {
                w.item = Some(i + 1);
            }
        }
        let holds = docs.iter().any(|d| {
            matches!(
                d,
                Doc::Argo(_) | Doc::Workload(_) | Doc::KfpV2(_) | Doc::List(_)
            )
        });
        Ok(holds.then_some(List { items: docs, roots }))
    }
}

/// Builds the edits that write the changed components of one document.
impl Doc {
    /// Whether writing this document's changes reads the scheduling each
    /// component had ([`Change::before`]); every format but KFP v2 does.
    pub fn writes_from_before(&self) -> bool {
        !matches!(self, Doc::KfpV2(_))
    }
}

/// What writing a document's changes hands the editor, one at a time.
pub enum Write<'e> {
    Edit(Edit),
    /// A new document `{path[0]: {… {key: value, …}}}` whose innermost
    /// entries come one at a time (see `Editor::add_document`), before
    /// document `before` of the stream or at its end.
    Document {
        before: Option<usize>,
        path: &'e [&'e str],
        entries: &'e mut dyn Iterator<Item = (String, Value)>,
    },
}

/// Writes the changes of one document into `out`. The changes are
/// consumed: a format frees each one once it is written.
pub fn write(
    tree: &Tree,
    doc: &Doc,
    flavor: Flavor,
    changes: Vec<Change>,
    out: &mut dyn FnMut(Write<'_>),
) {
    let edits = match doc {
        Doc::KfpV2(p) => return p.write(tree, flavor, changes, out),
        Doc::Argo(w) => w.write(tree, flavor, &changes),
        Doc::Workload(_) => changes
            .iter()
            .filter_map(|c| match &c.component.place {
                Place::Workload(pt) => Some(workload::write(tree, pt, flavor, c)),
                _ => None,
            })
            .flatten()
            .collect(),
        _ => Vec::new(),
    };
    // The plans are written out: free them before the edits render.
    drop(changes);
    for edit in edits {
        out(Write::Edit(edit));
    }
}
