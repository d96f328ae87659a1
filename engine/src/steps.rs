//! The stateless steps of a pipeline ([`crate::spec::Step`]: filters and projections), compiled
//! once and applied to one record (or output row) at a time. Pure: the source actor runs a
//! pipeline's source steps right after decoding, the partition actors run its output steps on
//! each row before it is written (SEMANTICS.md "Source filters and projections").
//!
//! A projection's items whose column no later step or the query reads are not evaluated (their
//! value is NULL): as Spark's optimizer prunes unused columns, an expression that is never read
//! can neither cost time nor fail a record.

use std::fmt;
use std::sync::Arc;

use crate::expr::{Compiled, Dest, ExprError, Fail, Node, Typed};
use crate::spec::Step;
use crate::value::{Record, Value};

/// What the steps made of one record.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// The record after the steps (the input itself when there are none).
    Keep(Record),
    /// A filter did not hold (false or NULL).
    Drop,
    /// An expression failed (SQL.md "Errors while evaluating"); the record goes to the dead
    /// letters.
    Failed {
        /// The expression's error, `DIVIDE_BY_ZERO in "(a / b)"`, or `null event time column
        /// ts` for a required column that is NULL after the steps.
        reason: String,
        /// The record as it was given to [`CompiledSteps::apply`].
        input: Record,
    },
}

/// What [`CompiledSteps::apply_row`] made of one row.
#[derive(Debug, Clone, PartialEq)]
pub enum RowApplied {
    /// The row now holds the steps' output.
    Keep,
    /// A filter did not hold (false or NULL); the row is as it was given.
    Drop,
    /// An expression failed (as [`Applied::Failed`]): the reason, and the pipeline field the
    /// failing step was written in (`query.sql`, `sink.select`; [`CompiledSteps::new`]); the
    /// row is as it was given.
    Failed(String, Arc<str>),
}

enum Compiled1 {
    Filter(Compiled),
    Project(Projection),
}

/// A projection step: one item per output column.
struct Projection {
    items: Vec<Item>,
    /// Whether the step is the last one: its plain columns are then moved out of the record it
    /// reads (which nothing reads after it) instead of copied.
    moves: bool,
    /// The first `in_place` items are the input's columns where they are (or not read later)
    /// and the rest are computed: given a record with room for the rest
    /// ([`CompiledSteps::spare_columns`] NULL slots after its columns, as the decoders leave
    /// them), the step writes them there instead of building a new record. 0: not so.
    in_place: usize,
    /// When every plain column of the step is the input column at its own index (a rename at
    /// most) and every item past the input's width is computed: the indexes of the computed
    /// items, in order. [`CompiledSteps::apply_row`] then computes those and writes them into
    /// the row, leaving the other columns where they are. `None`: not so.
    row_in_place: Option<Vec<usize>>,
    /// For the first projection of the steps when it is also the last step and is not in place
    /// (`in_place` is 0: the input's columns reordered, dropped, or replaced by computed ones):
    /// how [`CompiledSteps::apply_batch`] rearranges records in place, with one pass per
    /// expression. A record has room for every item (spare NULL slots after the input's
    /// columns, as for `in_place`, when there are more items than input columns) and is
    /// rearranged with no new record; with fewer items than input columns, it is then cut to
    /// their number (the allocator shrinks the values where they are). `None`: not so.
    permute: Option<Rearrange>,
}

impl Projection {
    /// Pushes the step's output values onto `out`, reading `input`: computed ones, copies, and
    /// NULL for unread items and (`moving`) for the plain columns [`Projection::take_moved`]
    /// moves in afterwards, once nothing can fail. `Err`: the failed expression's reason.
    fn compute(&self, input: &[Value], out: &mut Vec<Value>, moving: bool) -> Result<(), String> {
        for item in &self.items {
            out.push(match item {
                Item::Unread => Value::Null,
                Item::Column { last: true, .. } if moving => Value::Null,
                Item::Column { index, .. } => input.get(*index).cloned().unwrap_or_default(),
                Item::Computed(c) => c.eval_raw(input).map_err(|e| reason(&e.into()))?,
            });
        }
        Ok(())
    }

    /// Output column `i` as it will be once moved: from `input` for a column still to move,
    /// from `out` otherwise.
    fn output_value<'a>(&self, i: usize, input: &'a [Value], out: &'a [Value]) -> Option<&'a Value> {
        match self.items.get(i) {
            Some(Item::Column { index, last: true }) => input.get(*index),
            _ => out.get(i),
        }
    }

    /// Moves the plain columns each read last by this step from `input` into `out` (filled by
    /// [`Projection::compute`] with `moving`).
    fn take_moved(&self, input: &mut [Value], out: &mut [Value]) {
        for (v, item) in out.iter_mut().zip(&self.items) {
            if let Item::Column { index, last: true } = item
                && let Some(s) = input.get_mut(*index)
            {
                *v = std::mem::take(s);
            }
        }
    }
}

/// One output column of a projection.
enum Item {
    /// Not read later: NULL, not evaluated.
    Unread,
    /// A plain column of the step's input. `last`: no later item of the step reads it, so a
    /// moving projection takes it instead of copying it.
    Column { index: usize, last: bool },
    /// Any other expression.
    Computed(Compiled),
}

/// How a projection rearranges a record of its input's `width` columns and spare NULL slots
/// (as many slots as the items or the input's columns, whichever is more) into its output, in
/// place ([`Projection::permute`]): the input
/// columns that stay where they are are not touched; computed items whose slot is a spare one
/// are written there over the whole batch; the other computed items are computed apart over
/// the batch, and the input columns that move are saved before any slot is written.
#[derive(Debug)]
struct Rearrange {
    width: usize,
    /// Per item, where its output value comes from.
    outs: Vec<Out>,
    /// Input columns saved before the writes (index, whether to copy it: it also stays in
    /// place), in the order of [`Write::Saved`]'s `at`.
    saved: Vec<(usize, bool)>,
    /// The slots written after the computation, in order, each from a saved column (`clone`:
    /// a later write reads it too), a value computed apart, or NULL.
    writes: Vec<(usize, Write)>,
}

/// Where output column `i` of a [`Rearrange`] comes from.
#[derive(Debug, Clone, Copy)]
enum Out {
    /// The input column at index `i`, left where it is.
    InPlace,
    /// Computed straight into spare slot `i`.
    Direct,
    /// Computed apart: the `k`th vector of values computed apart.
    Apart(usize),
    /// The input column at this index (moved or copied there).
    Column(usize),
    /// NULL (not read later).
    Null,
}

/// One write of a [`Rearrange`].
#[derive(Debug, Clone, Copy)]
enum Write {
    Saved { at: usize, clone: bool },
    Apart(usize),
    Null,
}

impl Rearrange {
    /// The plan for `items` over an input of `width` columns.
    fn new(items: &[Item], width: usize) -> Rearrange {
        let in_place = |i: usize| matches!(items.get(i), Some(Item::Column { index, .. }) if *index == i);
        let mut outs = Vec::with_capacity(items.len());
        let mut saved: Vec<(usize, bool)> = Vec::new();
        let mut writes = Vec::new();
        let mut apart = 0;
        for (i, item) in items.iter().enumerate() {
            outs.push(match item {
                Item::Column { index, .. } if *index == i => Out::InPlace,
                Item::Column { index, .. } => {
                    let at = match saved.iter().position(|(s, _)| s == index) {
                        Some(at) => at,
                        None => {
                            saved.push((*index, in_place(*index)));
                            saved.len() - 1
                        }
                    };
                    writes.push((i, Write::Saved { at, clone: false }));
                    Out::Column(*index)
                }
                Item::Computed(_) if i >= width => Out::Direct,
                Item::Computed(_) => {
                    writes.push((i, Write::Apart(apart)));
                    apart += 1;
                    Out::Apart(apart - 1)
                }
                Item::Unread => {
                    writes.push((i, Write::Null));
                    Out::Null
                }
            });
        }
        // a saved column read by several writes is copied by all of them but the last
        let mut seen = vec![false; saved.len()];
        for (_, w) in writes.iter_mut().rev() {
            if let Write::Saved { at, clone } = w {
                *clone = seen[*at];
                seen[*at] = true;
            }
        }
        Rearrange { width, outs, saved, writes }
    }

    /// Output column `i` of record `at` of a batch before the writes: `values` is the
    /// record's (its direct items written), `apart` the values computed apart. `None`: NULL.
    fn output<'a>(&self, i: usize, values: &'a [Value], apart: &'a [Vec<Value>], at: usize) -> Option<&'a Value> {
        match *self.outs.get(i)? {
            Out::InPlace | Out::Direct => values.get(i),
            Out::Apart(k) => apart.get(k)?.get(at),
            Out::Column(index) => values.get(index),
            Out::Null => None,
        }
    }
}

/// Compiled steps: [`CompiledSteps::apply`] runs them in order.
pub struct CompiledSteps {
    steps: Vec<Compiled1>,
    /// Columns of the steps' output that must not be NULL (event time, replay clock), with
    /// their names for the reason.
    required: Vec<(usize, String)>,
    /// Whether an expression calls `current_timestamp()` ([`Typed::reads_processing_time`]).
    reads_processing_time: bool,
    /// Per compiled step, the pipeline field it was written in, without an item's index
    /// (`query.sql`, `sink.select`): what a row's failure is labelled with.
    fields: Vec<Arc<str>>,
}

impl fmt::Debug for CompiledSteps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSteps").field("steps", &self.steps.len()).field("required", &self.required).finish()
    }
}

impl CompiledSteps {
    /// Compiles `steps` for an input of `input_width` columns. `needed[i]`: whether column `i`
    /// of the steps' output is read afterwards (one entry per output column; shorter: not
    /// read). `required` (output column index, name): columns that must not be NULL after the
    /// steps (a record where one is gets [`Applied::Failed`] naming it, as the decoder does).
    ///
    /// Returns the steps and which input columns they read.
    pub fn new(
        steps: &[Step],
        input_width: usize,
        needed: &[bool],
        required: Vec<(usize, String)>,
    ) -> (CompiledSteps, Vec<bool>) {
        // Walk back from the output: which columns each step's input must have.
        let mut need: Vec<bool> = needed.to_vec();
        for &(r, _) in &required {
            if r >= need.len() {
                need.resize(r + 1, false);
            }
            need[r] = true;
        }
        let mut compiled = Vec::with_capacity(steps.len());
        let mut fields: Vec<Arc<str>> = Vec::with_capacity(steps.len());
        for (k, step) in steps.iter().enumerate().rev() {
            let field = step_field(step);
            let width = if k == 0 { input_width } else { width_after(&steps[..k], input_width) };
            let mut before = vec![false; width];
            match step {
                Step::Filter(e) => {
                    columns_of(&e.typed, &mut before);
                    for (i, n) in need.iter().enumerate() {
                        if *n && i < width {
                            before[i] = true;
                        }
                    }
                    compiled.push(Compiled1::Filter(Compiled::new(&e.typed)));
                    fields.push(field);
                }
                Step::Project(items) => {
                    let mut out = Vec::with_capacity(items.len());
                    for (i, e) in items.iter().enumerate() {
                        if !need.get(i).copied().unwrap_or(false) {
                            out.push(Item::Unread);
                            continue;
                        }
                        columns_of(&e.typed, &mut before);
                        out.push(match e.typed.node {
                            Node::Column(index) => Item::Column { index, last: true },
                            _ => Item::Computed(Compiled::new(&e.typed)),
                        });
                    }
                    // an input column read by several items is moved by the last one only
                    let mut seen = vec![false; width];
                    for item in out.iter_mut().rev() {
                        if let Item::Column { index, last } = item
                            && let Some(s) = seen.get_mut(*index)
                        {
                            *last = !*s;
                            *s = true;
                        }
                    }
                    let identity = out.len() == width
                        && out.iter().enumerate().all(|(i, item)| match item {
                            Item::Unread => true,
                            Item::Column { index, .. } => *index == i,
                            Item::Computed(_) => false,
                        });
                    let moves = k + 1 == steps.len();
                    // the first projection, over the input's columns in place, then computed ones
                    let first = !steps[..k].iter().any(|s| matches!(s, Step::Project(_)));
                    let prefix = out.len() > width
                        && out[..width].iter().enumerate().all(|(i, item)| match item {
                            Item::Unread => true,
                            Item::Column { index, .. } => *index == i,
                            Item::Computed(_) => false,
                        })
                        && out[width..].iter().all(|item| !matches!(item, Item::Column { .. }));
                    let in_place = if first && prefix { width } else { 0 };
                    let row_in_place = out
                        .iter()
                        .enumerate()
                        .all(|(i, item)| match item {
                            Item::Column { index, .. } => *index == i,
                            Item::Computed(_) => true,
                            Item::Unread => false,
                        })
                        .then(|| {
                            out.iter()
                                .enumerate()
                                .filter(|(_, item)| matches!(item, Item::Computed(_)))
                                .map(|(i, _)| i)
                                .collect()
                        });
                    // a projection that keeps the record as it is (every item the input column at
                    // its own index, or not read later, as many as the input has) is left out
                    // (the batch runs it as the last step only: no spare slots otherwise)
                    let permute = (first && moves && in_place == 0).then(|| Rearrange::new(&out, width));
                    if !identity {
                        compiled.push(Compiled1::Project(Projection {
                            items: out,
                            moves,
                            in_place,
                            row_in_place,
                            permute,
                        }));
                        fields.push(field);
                    }
                }
            }
            need = before;
        }
        compiled.reverse();
        fields.reverse();
        need.resize(input_width, false);
        let reads_processing_time = steps.iter().any(Step::reads_processing_time);
        (CompiledSteps { steps: compiled, required, reads_processing_time, fields }, need)
    }

    /// Whether an expression of the steps calls `current_timestamp()`: whoever runs them sets
    /// the processing time first ([`crate::expr::set_processing_time`]).
    pub fn reads_processing_time(&self) -> bool {
        self.reads_processing_time
    }

    /// How many NULL slots after its columns a record given to [`CompiledSteps::apply`] should
    /// have: the first projection then writes its output there, in place, with no new record
    /// (the source's decoder allocates them: `JsonDecoder::with_spare_columns`). One slot per
    /// item past the input's width: the first projection's computed columns after the input's
    /// columns in place, or its items rearranged in place; 0 when the first
    /// projection has no more items than the input has columns, or there is none. A record
    /// without the slots is projected as any other.
    pub fn spare_columns(&self) -> usize {
        self.steps
            .iter()
            .find_map(|s| match s {
                Compiled1::Project(p) if p.in_place > 0 => Some(p.items.len() - p.in_place),
                Compiled1::Project(Projection { permute: Some(r), items, .. }) => {
                    Some(items.len().saturating_sub(r.width))
                }
                Compiled1::Project(_) => Some(0),
                Compiled1::Filter(_) => None,
            })
            .unwrap_or(0)
    }

    /// The width of the records [`CompiledSteps::apply_batch`] leaves when its `select` has
    /// fewer items than the records have columns (it moves their values into records of that
    /// width: [`BatchScratch::narrow_records`]); `None` when it cuts no record.
    pub fn narrows_to(&self) -> Option<usize> {
        match self.steps.last() {
            Some(Compiled1::Project(Projection { permute: Some(r), items, .. })) if items.len() < r.width => {
                Some(items.len())
            }
            _ => None,
        }
    }

    /// Whether no step does anything per record (there were none, or only projections that
    /// keep the record as it is); required columns may remain to check.
    pub fn has_no_steps(&self) -> bool {
        self.steps.is_empty()
    }

    /// Whether there is nothing to do: no steps and no required column.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.required.is_empty()
    }

    /// Runs the steps on `input`. A projection allocates the new record's values once (none
    /// when it keeps the input's columns as they are); a filter alone allocates nothing. The
    /// last projection moves its plain columns out of the record instead of copying them, once
    /// nothing can fail any more.
    pub fn apply(&self, input: Record) -> Applied {
        self.apply_at(input).0
    }

    /// [`CompiledSteps::apply`], and the index of the step it stopped at (a filter that did not
    /// hold or the step that failed; the last step when it kept the record).
    fn apply_at(&self, mut input: Record) -> (Applied, usize) {
        let mut current: Option<Record> = None;
        // the width of `input` as given, once a projection wrote into its spare slots
        let mut filled: Option<usize> = None;
        let last = self.steps.len().saturating_sub(1);
        for (at, step) in self.steps.iter().enumerate() {
            if let Compiled1::Project(p) = step
                && p.in_place > 0
                && current.is_none()
                && input.values.len() == p.items.len()
            {
                for k in p.in_place..p.items.len() {
                    let v = match &p.items[k] {
                        Item::Computed(c) => match c.eval_raw(&input.values) {
                            Ok(v) => v,
                            Err(e) => return (failed(reason(&e.into()), input, Some(p.in_place)), at),
                        },
                        _ => Value::Null,
                    };
                    input.values[k] = v;
                }
                filled = Some(p.in_place);
                continue;
            }
            let record = current.as_ref().unwrap_or(&input);
            match step {
                Compiled1::Filter(c) => match c.eval_raw(&record.values) {
                    Ok(Value::Bool(true)) => {}
                    Ok(_) => return (Applied::Drop, at),
                    Err(e) => return (failed(reason(&e.into()), input, filled), at),
                },
                Compiled1::Project(p) => {
                    let mut values = Vec::with_capacity(p.items.len());
                    if let Err(reason) = p.compute(&record.values, &mut values, p.moves) {
                        return (failed(reason, input, filled), at);
                    }
                    if p.moves {
                        // the last step: check what must not be NULL before the record is taken apart
                        if let Some(name) = self.null_required(|i| p.output_value(i, &record.values, &values)) {
                            return (failed(format!("null event time column {name}"), input, filled), at);
                        }
                        let mut source = current.take().unwrap_or(input);
                        p.take_moved(&mut source.values, &mut values);
                        return (Applied::Keep(Record::new(values)), at);
                    }
                    current = Some(Record::new(values));
                }
            }
        }
        let record = current.as_ref().unwrap_or(&input);
        if let Some(name) = self.null_required(|i| record.values.get(i)) {
            return (failed(format!("null event time column {name}"), input, filled), last);
        }
        (Applied::Keep(current.unwrap_or(input)), last)
    }

    /// The field of step `at` (the last one past the end), `""` without steps.
    fn field(&self, at: usize) -> Arc<str> {
        self.fields.get(at).or(self.fields.last()).cloned().unwrap_or_else(|| Arc::from(""))
    }

    /// [`CompiledSteps::apply`] on a batch of records at once: the records the steps keep stay
    /// in `records`, in order, each as [`CompiledSteps::apply`] makes it; every other one is
    /// given to `rejected` with its index in the batch as given and what `apply` makes of it
    /// ([`Applied::Drop`], or [`Applied::Failed`] with the record as it was given), in index
    /// order.
    ///
    /// Filters followed by at most one projection, the first one (the source steps' shape, on
    /// records with [`CompiledSteps::spare_columns`] slots, as the decoders leave them), run
    /// expression by expression over the whole batch ([`Compiled`]'s batch form: one indirect
    /// call per expression node and batch instead of per record); a filter that holds for every
    /// record moves nothing, and the projection writes into each record in place (computed
    /// columns after the input's, or the record rearranged).
    /// Any other shape, or a batch with a record of another width, runs record by record through
    /// `apply`.
    /// `scratch` is kept from batch to batch so that, once grown, a batch allocates nothing.
    pub fn apply_batch(
        &self,
        records: &mut Vec<Record>,
        scratch: &mut BatchScratch,
        mut rejected: impl FnMut(usize, Applied),
    ) {
        let (filters, projection) = match self.steps.split_last() {
            Some((Compiled1::Project(p), filters)) if p.in_place > 0 || p.permute.is_some() => (filters, Some(p)),
            _ => (&self.steps[..], None),
        };
        let batchable = filters.iter().all(|s| matches!(s, Compiled1::Filter(_)))
            && projection.is_none_or(|p| {
                let slots = p.permute.as_ref().map_or(p.items.len(), |r| r.width.max(p.items.len()));
                records.iter().all(|r| r.values.len() == slots)
            });
        if !batchable {
            let given = std::mem::replace(records, std::mem::take(&mut scratch.spare));
            records.clear();
            scratch.origin.clear();
            for (i, r) in given.into_iter().enumerate() {
                match self.apply(r) {
                    Applied::Keep(r) => {
                        records.push(r);
                        scratch.origin.push(i as u32);
                    }
                    other => rejected(i, other),
                }
            }
            return;
        }
        let BatchScratch { holds, fails, origin, spare, rearranging } = scratch;
        origin.clear();
        origin.extend(0..records.len() as u32);
        let mut out: Vec<(u32, Applied)> = Vec::new();
        for step in filters {
            let Compiled1::Filter(c) = step else { continue };
            holds.clear();
            fails.clear();
            c.eval_batch(records, Dest::Holds(holds), fails);
            if fails.is_empty() && holds.iter().all(|h| *h) {
                continue;
            }
            let mut failures = fails.drain(..).peekable();
            keep_where(
                records,
                spare,
                origin,
                |i, r| {
                    if holds[i] {
                        return Ok(r);
                    }
                    match failures.next_if(|(at, _)| *at as usize == i) {
                        Some((_, e)) => Err(Applied::Failed { reason: reason(&e.into()), input: r }),
                        None => Err(Applied::Drop),
                    }
                },
                &mut out,
            );
        }
        if let Some(p) = projection
            && p.permute.is_some()
        {
            self.permute_batch(p, records, fails, rearranging);
            if !rearranging.bad.is_empty() {
                let mut rejects = rearranging.bad.drain(..).peekable();
                keep_where(
                    records,
                    spare,
                    origin,
                    |i, r| match rejects.next_if(|(at, _)| *at as usize == i) {
                        // a record rejected is as given
                        Some((_, reason)) => Err(Applied::Failed { reason, input: r }),
                        None => Ok(r),
                    },
                    &mut out,
                );
            }
        } else if let Some(p) = projection {
            fails.clear();
            for (k, item) in p.items.iter().enumerate().skip(p.in_place) {
                if let Item::Computed(c) = item {
                    let before = fails.len();
                    c.eval_batch(records, Dest::Column(k), fails);
                    if fails.len() > before && before > 0 {
                        // in record order, the first failure of each record first
                        fails.sort_by_key(|(at, _)| *at);
                    }
                }
            }
            if !fails.is_empty() {
                let mut failures = fails.drain(..).peekable();
                keep_where(
                    records,
                    spare,
                    origin,
                    |i, r| {
                        let Some((_, e)) = failures.next_if(|(at, _)| *at as usize == i) else { return Ok(r) };
                        // a later expression may have failed on the same record: the first one is its reason
                        while failures.next_if(|(at, _)| *at as usize == i).is_some() {}
                        Err(failed(reason(&e.into()), r, Some(p.in_place)))
                    },
                    &mut out,
                );
            }
        }
        // (a rearranging projection checked the required columns itself)
        if !self.required.is_empty() && projection.is_none_or(|p| p.permute.is_none()) {
            let filled = projection.map(|p| p.in_place);
            keep_where(
                records,
                spare,
                origin,
                |_, r| match self.null_required(|i| r.values.get(i)) {
                    None => Ok(r),
                    Some(name) => Err(failed(format!("null event time column {name}"), r, filled)),
                },
                &mut out,
            );
        }
        out.sort_by_key(|(i, _)| *i);
        for (i, a) in out {
            rejected(i as usize, a);
        }
    }

    /// The batch form of a projection that rearranges the records in place
    /// ([`Projection::permute`]; every record has a slot per item or per input column, whichever
    /// is more): its computed items over the batch, into their spare slots or apart
    /// (`columns`), then each record's moving columns saved (in `row`), its slots written as the
    /// plan says, and its values cut to the items' number if there are more (moved into a
    /// record of that width from `narrow`, the record given going to `emptied`). A record an
    /// expression failed on, or whose output would hold a NULL where `required` forbids one, is
    /// left as it was given (its spare slots NULL again) and pushed to `bad` (index in
    /// `records`, reason: its first failure), in record order.
    fn permute_batch(
        &self,
        p: &Projection,
        records: &mut [Record],
        fails: &mut Vec<(u32, Fail)>,
        scratch: &mut Rearranging,
    ) {
        let Rearranging { columns, row, bad, narrow, emptied } = scratch;
        fails.clear();
        bad.clear();
        let Some(plan) = &p.permute else { return };
        let mut n = 0;
        for (k, (item, out)) in p.items.iter().zip(&plan.outs).enumerate() {
            let Item::Computed(c) = item else { continue };
            let before = fails.len();
            match out {
                Out::Direct => c.eval_batch(records, Dest::Column(k), fails),
                _ => {
                    if columns.len() == n {
                        columns.push(Vec::new());
                    }
                    columns[n].clear();
                    c.eval_batch(records, Dest::Values(&mut columns[n]), fails);
                    n += 1;
                }
            }
            if fails.len() > before && before > 0 {
                // in record order, the first failure of each record first
                fails.sort_by_key(|(at, _)| *at);
            }
        }
        let apart = &mut columns[..n];
        let mut failures = fails.drain(..).peekable();
        for (i, r) in records.iter_mut().enumerate() {
            let reject = match failures.next_if(|(at, _)| *at as usize == i) {
                Some((_, e)) => {
                    while failures.next_if(|(at, _)| *at as usize == i).is_some() {}
                    Some(reason(&e.into()))
                }
                None => self
                    .null_required(|k| plan.output(k, &r.values, apart, i))
                    .map(|name| format!("null event time column {name}")),
            };
            if let Some(reason) = reject {
                r.values.iter_mut().skip(plan.width).for_each(|v| *v = Value::Null);
                bad.push((i as u32, reason));
                continue;
            }
            row.clear();
            for &(index, clone) in &plan.saved {
                let v = r.values.get_mut(index);
                row.push(if clone { v.map(|v| v.clone()) } else { v.map(std::mem::take) }.unwrap_or_default());
            }
            for &(slot, write) in &plan.writes {
                let v = match write {
                    Write::Saved { at, clone: false } => row.get_mut(at).map(std::mem::take),
                    Write::Saved { at, clone: true } => row.get(at).cloned(),
                    Write::Apart(k) => apart.get_mut(k).and_then(|c| c.get_mut(i)).map(std::mem::take),
                    Write::Null => None,
                };
                if let Some(s) = r.values.get_mut(slot) {
                    *s = v.unwrap_or_default();
                }
            }
            if plan.outs.len() < r.values.len() {
                // fewer items than input columns: the first ones moved to a record of that
                // width, the record given (all NULL then) kept for reuse
                let width = plan.outs.len();
                let mut cut = loop {
                    match narrow.pop() {
                        Some(n) if n.values.len() == width => break n,
                        Some(_) => continue,
                        None => break Record::new(std::iter::repeat_with(Value::default).take(width).collect()),
                    }
                };
                for (to, from) in cut.values.iter_mut().zip(r.values.iter_mut()) {
                    *to = std::mem::take(from);
                }
                r.values[width..].iter_mut().for_each(|v| *v = Value::Null);
                emptied.push(std::mem::replace(r, cut));
            }
        }
    }

    /// [`CompiledSteps::apply`] on a row held in a `Vec`, in place: the sink's `select` and a
    /// SQL query's HAVING and select list on every output row. `scratch` is a buffer kept from
    /// row to row: a projection builds the new row there and the two buffers are swapped, so
    /// once both have grown no row allocates. Filters followed by at most one projection (the
    /// shapes the planner makes) run so; other step lists go through [`CompiledSteps::apply`].
    pub fn apply_row(&self, row: &mut Vec<Value>, scratch: &mut Vec<Value>) -> RowApplied {
        let projection = match self.steps.split_last() {
            Some((Compiled1::Project(p), filters)) if filters.iter().all(|s| matches!(s, Compiled1::Filter(_))) => {
                Some((p, filters))
            }
            _ if self.steps.iter().all(|s| matches!(s, Compiled1::Filter(_))) => None,
            _ => return self.apply_row_as_record(row),
        };
        let filters = projection.map_or(&self.steps[..], |(_, f)| f);
        for (at, step) in filters.iter().enumerate() {
            if let Compiled1::Filter(c) = step {
                match c.eval_raw(row) {
                    Ok(Value::Bool(true)) => {}
                    Ok(_) => return RowApplied::Drop,
                    Err(e) => return RowApplied::Failed(reason(&e.into()), self.field(at)),
                }
            }
        }
        // the projection, or the null check after the filters: the last step's (its name
        // shared only when a row fails)
        let last = || self.field(usize::MAX);
        let Some((p, _)) = projection else {
            return match self.null_required(|i| row.get(i)) {
                Some(name) => RowApplied::Failed(format!("null event time column {name}"), last()),
                None => RowApplied::Keep,
            };
        };
        if let Some(computed) = &p.row_in_place
            && self.required.is_empty()
        {
            // the computed values first (each reads the row as it came), then into their places
            scratch.clear();
            for &k in computed {
                if let Some(Item::Computed(c)) = p.items.get(k) {
                    match c.eval_raw(row) {
                        Ok(v) => scratch.push(v),
                        Err(e) => {
                            scratch.clear();
                            return RowApplied::Failed(reason(&e.into()), last());
                        }
                    }
                }
            }
            for (&k, v) in computed.iter().zip(scratch.drain(..)) {
                match row.get_mut(k) {
                    Some(slot) => *slot = v,
                    None => row.push(v),
                }
            }
            row.truncate(p.items.len());
            return RowApplied::Keep;
        }
        scratch.clear();
        if let Err(reason) = p.compute(row, scratch, true) {
            scratch.clear();
            return RowApplied::Failed(reason, last());
        }
        if let Some(name) = self.null_required(|i| p.output_value(i, row, scratch)) {
            let reason = format!("null event time column {name}");
            scratch.clear();
            return RowApplied::Failed(reason, last());
        }
        p.take_moved(row, scratch);
        std::mem::swap(row, scratch);
        scratch.clear();
        RowApplied::Keep
    }

    fn apply_row_as_record(&self, row: &mut Vec<Value>) -> RowApplied {
        match self.apply_at(Record::new(std::mem::take(row))) {
            (Applied::Keep(r), _) => {
                *row = r.values.into_vec();
                RowApplied::Keep
            }
            (Applied::Drop, _) => RowApplied::Drop,
            (Applied::Failed { reason, input }, at) => {
                *row = input.values.into_vec();
                RowApplied::Failed(reason, self.field(at))
            }
        }
    }

    /// The name of the first required column whose value (`value(index)`) is NULL.
    #[inline]
    fn null_required<'a>(&'a self, value: impl Fn(usize) -> Option<&'a Value>) -> Option<&'a str>
    where
        Self: 'a,
    {
        if self.required.is_empty() {
            return None;
        }
        self.required.iter().find(|(i, _)| value(*i).is_none_or(Value::is_null)).map(|(_, name)| name.as_str())
    }
}

/// The buffers [`CompiledSteps::apply_batch`] keeps from batch to batch.
#[derive(Default)]
pub struct BatchScratch {
    holds: Vec<bool>,
    fails: Vec<(u32, Fail)>,
    /// The index in the batch as given of each record still in it.
    origin: Vec<u32>,
    /// The other buffer of records when a step removes some.
    spare: Vec<Record>,
    rearranging: Rearranging,
}

/// The buffers of a projection that rearranges the records in place.
#[derive(Default)]
struct Rearranging {
    /// Its computed items' values over the batch, one vector per item.
    columns: Vec<Vec<Value>>,
    /// A record's values while they are rearranged.
    row: Vec<Value>,
    /// The records it rejects, with the reason.
    bad: Vec<(u32, String)>,
    /// Records to take the values of a record cut to fewer columns (used when of the width cut
    /// to): [`BatchScratch::narrow_records`].
    narrow: Vec<Record>,
    /// The records whose values moved to narrower ones: [`BatchScratch::emptied`].
    emptied: Vec<Record>,
}

/// Most records [`BatchScratch::narrow_records`] is meant to hold (its callers' bound).
pub const NARROW_KEPT: usize = 4_096;

impl BatchScratch {
    /// After [`CompiledSteps::apply_batch`]: the index in the batch as given of each record
    /// kept, in the order of the records kept.
    pub fn kept(&self) -> &[u32] {
        &self.origin
    }

    /// The records into which a `select` with fewer items than the records have values moves
    /// each kept record's values, so that the record given keeps its buffer (the decoder's or
    /// the source's, which [`BatchScratch::emptied`] hands back) and no record is shrunk or
    /// allocated. The caller adds the records of earlier batches that came back (the source
    /// actor: those the partitions handed back), up to [`NARROW_KEPT`]. One of another width
    /// than the `select`'s is dropped when reached; a new record is made when none is left.
    pub fn narrow_records(&mut self) -> &mut Vec<Record> {
        &mut self.rearranging.narrow
    }

    /// After [`CompiledSteps::apply_batch`]: the records given whose values moved into narrower
    /// ones ([`BatchScratch::narrow_records`]), each of its width as given and all NULL, for
    /// the decoder (or the source that made them) to reuse; taken out of the scratch.
    pub fn emptied(&mut self) -> std::vec::Drain<'_, Record> {
        self.rearranging.emptied.drain(..)
    }
}

impl fmt::Debug for BatchScratch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchScratch").finish_non_exhaustive()
    }
}

/// Keeps the records `decide` returns `Ok` for (`decide` gets each record's index in `records`),
/// in order, with their `origin`; the others go to `out` with their origin and what `decide`
/// made of them. Uses `spare` as the other buffer, so nothing is allocated once both have grown.
fn keep_where(
    records: &mut Vec<Record>,
    spare: &mut Vec<Record>,
    origin: &mut Vec<u32>,
    mut decide: impl FnMut(usize, Record) -> Result<Record, Applied>,
    out: &mut Vec<(u32, Applied)>,
) {
    std::mem::swap(records, spare);
    records.clear();
    let mut kept = 0;
    for (i, r) in spare.drain(..).enumerate() {
        match decide(i, r) {
            Ok(r) => {
                records.push(r);
                origin[kept] = origin[i];
                kept += 1;
            }
            Err(a) => out.push((origin[i], a)),
        }
    }
    origin.truncate(kept);
}

/// [`Applied::Failed`] with the input as it was given: the spare slots after its first `filled`
/// columns, if a projection wrote into them, are NULL again.
fn failed(reason: String, mut input: Record, filled: Option<usize>) -> Applied {
    if let Some(w) = filled {
        input.values.iter_mut().skip(w).for_each(|v| *v = Value::Null);
    }
    Applied::Failed { reason, input }
}

fn reason(e: &ExprError) -> String {
    e.to_string()
}

/// The pipeline field `step` was written in, without an item's index: `sink.select` for
/// `sink.select[2]`, `query.sql` as it is.
fn step_field(step: &Step) -> Arc<str> {
    let field = match step {
        Step::Filter(e) => Some(&e.field),
        Step::Project(items) => items.first().map(|e| &e.field),
    };
    let field = field.map_or("", |f| f.split('[').next().unwrap_or(f));
    Arc::from(field)
}

fn width_after(steps: &[Step], input_width: usize) -> usize {
    steps.iter().fold(input_width, |w, s| match s {
        Step::Filter(_) => w,
        Step::Project(items) => items.len(),
    })
}

/// Marks every column `t` reads.
pub(crate) fn columns_of(t: &Typed, out: &mut [bool]) {
    match &t.node {
        Node::Literal(_) => {}
        Node::Column(i) => {
            if let Some(slot) = out.get_mut(*i) {
                *slot = true;
            }
        }
        Node::Cast { input, .. } => columns_of(input, out),
        Node::And(a, b) | Node::Or(a, b) => {
            columns_of(a, out);
            columns_of(b, out);
        }
        Node::Case { branches, otherwise } => {
            for (c, v) in branches {
                columns_of(c, out);
                columns_of(v, out);
            }
            if let Some(o) = otherwise {
                columns_of(o, out);
            }
        }
        Node::Coalesce(items) => items.iter().for_each(|i| columns_of(i, out)),
        Node::In { value, list, .. } => {
            columns_of(value, out);
            list.iter().for_each(|i| columns_of(i, out));
        }
        Node::Call { args, .. } | Node::Udf { args, .. } => args.iter().for_each(|a| columns_of(a, out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{BinaryOp, Literal, Pos, Syntax, SyntaxKind, bind};
    use crate::schema::Schema;
    use crate::spec::PipelineExpr;

    fn col(name: &str) -> Syntax {
        Syntax { kind: SyntaxKind::Column(vec![name.into()]), pos: Pos::default() }
    }
    fn int(v: i64) -> Syntax {
        Syntax { kind: SyntaxKind::Literal(Literal::Integer(v)), pos: Pos::default() }
    }
    fn bin(op: BinaryOp, l: Syntax, r: Syntax) -> Syntax {
        Syntax { kind: SyntaxKind::Binary { op, left: Box::new(l), right: Box::new(r) }, pos: Pos::default() }
    }
    fn expr(s: &Syntax, schema: &Schema, name: &str) -> PipelineExpr {
        PipelineExpr { field: "t".into(), typed: bind(s, schema).unwrap(), name: name.into() }
    }

    fn schema() -> Schema {
        Schema::parse_ddl("a BIGINT, b BIGINT, c STRING").unwrap()
    }

    fn rec(a: i64, b: i64) -> Record {
        Record::new(vec![Value::Long(a), Value::Long(b), Value::Str("x".into())])
    }

    /// filter `a > 0`, select `a / b AS q, c`.
    fn steps() -> Vec<Step> {
        let s = schema();
        vec![
            Step::Filter(expr(&bin(BinaryOp::Gt, col("a"), int(0)), &s, "f")),
            Step::Project(vec![expr(&bin(BinaryOp::Divide, col("a"), col("b")), &s, "q"), expr(&col("c"), &s, "c")]),
        ]
    }

    #[test]
    fn filter_drops_and_projection_computes() {
        let (c, _) = CompiledSteps::new(&steps(), 3, &[true, true], vec![]);
        assert_eq!(c.apply(rec(-1, 1)), Applied::Drop);
        assert_eq!(c.apply(rec(3, 2)), Applied::Keep(Record::new(vec![Value::Double(1.5), Value::Str("x".into())])));
    }

    #[test]
    fn failing_expression_gives_its_spark_reason() {
        let (c, _) = CompiledSteps::new(&steps(), 3, &[true, true], vec![]);
        assert_eq!(
            c.apply(rec(1, 0)),
            Applied::Failed { reason: "DIVIDE_BY_ZERO in \"(a / b)\"".into(), input: rec(1, 0) }
        );
    }

    #[test]
    fn unread_projection_items_are_not_evaluated_and_their_inputs_not_needed() {
        // only `c` is read later: `a / b` is neither computed (no failure) nor decoded for, but
        // the filter still needs `a`
        let (c, needed) = CompiledSteps::new(&steps(), 3, &[false, true], vec![]);
        assert_eq!(needed, vec![true, false, true]);
        assert_eq!(c.apply(rec(1, 0)), Applied::Keep(Record::new(vec![Value::Null, Value::Str("x".into())])));
    }

    #[test]
    fn null_required_column_after_the_steps_fails_the_record() {
        let s = schema();
        let nullable = vec![Step::Project(vec![expr(
            &Syntax { kind: SyntaxKind::Literal(Literal::Null), pos: Pos::default() },
            &s,
            "ts",
        )])];
        let (c, _) = CompiledSteps::new(&nullable, 3, &[], vec![(0, "ts".into())]);
        assert_eq!(
            c.apply(rec(1, 1)),
            Applied::Failed { reason: "null event time column ts".into(), input: rec(1, 1) }
        );
    }

    #[test]
    fn a_column_selected_twice_is_copied_then_moved_and_an_identity_passes_through() {
        let s = schema();
        let twice =
            vec![Step::Project(vec![expr(&col("c"), &s, "c1"), expr(&col("a"), &s, "a"), expr(&col("c"), &s, "c2")])];
        let (c, _) = CompiledSteps::new(&twice, 3, &[true, true, true], vec![]);
        assert_eq!(
            c.apply(rec(7, 1)),
            Applied::Keep(Record::new(vec![Value::Str("x".into()), Value::Long(7), Value::Str("x".into())]))
        );
        // a projection of the input's columns in place (the last one unread) is the input
        let same =
            vec![Step::Project(vec![expr(&col("a"), &s, "a"), expr(&col("b"), &s, "b"), expr(&col("c"), &s, "c")])];
        let (c, _) = CompiledSteps::new(&same, 3, &[true, true, false], vec![]);
        assert_eq!(c.apply(rec(7, 1)), Applied::Keep(rec(7, 1)));
    }

    #[test]
    fn a_null_required_column_is_caught_before_the_last_projection_moves_the_record_apart() {
        let s = schema();
        // `b AS ts, a / 1 AS q`: `ts` moved from the input, required
        let steps = vec![Step::Project(vec![
            expr(&col("b"), &s, "ts"),
            expr(&bin(BinaryOp::Divide, col("a"), int(1)), &s, "q"),
        ])];
        let (c, _) = CompiledSteps::new(&steps, 3, &[true, true], vec![(0, "ts".into())]);
        let null_ts = Record::new(vec![Value::Long(1), Value::Null, Value::Str("x".into())]);
        assert_eq!(
            c.apply(null_ts.clone()),
            Applied::Failed { reason: "null event time column ts".into(), input: null_ts }
        );
        assert_eq!(c.apply(rec(3, 5)), Applied::Keep(Record::new(vec![Value::Long(5), Value::Double(3.0)])));
    }

    #[test]
    fn computed_columns_go_into_the_spare_slots_of_the_record_and_a_failure_empties_them() {
        let s = schema();
        // `a, b, c, a * 2 AS twice, 10 / b AS q`: the input's columns in place, then computed
        let steps = vec![Step::Project(vec![
            expr(&col("a"), &s, "a"),
            expr(&col("b"), &s, "b"),
            expr(&col("c"), &s, "c"),
            expr(&bin(BinaryOp::Multiply, col("a"), int(2)), &s, "twice"),
            expr(&bin(BinaryOp::Divide, int(10), col("b")), &s, "q"),
        ])];
        let (c, _) = CompiledSteps::new(&steps, 3, &[true; 5], vec![]);
        assert_eq!(c.spare_columns(), 2);
        let spare = |a: i64, b: i64| {
            let mut r = rec(a, b).values.into_vec();
            r.extend([Value::Null, Value::Null]);
            Record::new(r)
        };
        let out = Record::new(vec![
            Value::Long(3),
            Value::Long(4),
            Value::Str("x".into()),
            Value::Long(6),
            Value::Double(2.5),
        ]);
        assert_eq!(c.apply(spare(3, 4)), Applied::Keep(out.clone()));
        // the same without the slots: a new record
        assert_eq!(c.apply(rec(3, 4)), Applied::Keep(out));
        // `a * 2` written, then `10 / b` fails: the record goes back as it came
        assert_eq!(
            c.apply(spare(3, 0)),
            Applied::Failed { reason: "DIVIDE_BY_ZERO in \"(10 / b)\"".into(), input: spare(3, 0) }
        );
        // a projection narrower than the input has no spare slots; one that reorders the
        // input's columns among computed ones has a slot for each item past the input's width
        let narrower = vec![Step::Project(vec![expr(&col("b"), &s, "b"), expr(&col("a"), &s, "a")])];
        assert_eq!(CompiledSteps::new(&narrower, 3, &[true; 2], vec![]).0.spare_columns(), 0);
        let reorder = vec![Step::Project(vec![
            expr(&col("b"), &s, "b"),
            expr(&bin(BinaryOp::Multiply, col("a"), int(2)), &s, "twice"),
            expr(&col("a"), &s, "a"),
            expr(&col("c"), &s, "c"),
        ])];
        let (c, _) = CompiledSteps::new(&reorder, 3, &[true; 4], vec![]);
        assert_eq!(c.spare_columns(), 1);
        let mut batch = vec![spare(3, 4).values.into_vec(), spare(5, 6).values.into_vec()]
            .into_iter()
            .map(|mut v| {
                v.truncate(4);
                Record::new(v)
            })
            .collect::<Vec<_>>();
        let given: Vec<*const Value> = batch.iter().map(|r| r.values.as_ptr()).collect();
        c.apply_batch(&mut batch, &mut BatchScratch::default(), |i, a| panic!("record {i} rejected: {a:?}"));
        let row = |b: i64, a: i64| {
            Record::new(vec![Value::Long(b), Value::Long(a * 2), Value::Long(a), Value::Str("x".into())])
        };
        assert_eq!(batch, vec![row(4, 3), row(6, 5)]);
        // rearranged in place: the records' values were not allocated again
        assert_eq!(batch.iter().map(|r| r.values.as_ptr()).collect::<Vec<_>>(), given);
    }

    /// Required columns: (output index, name).
    type Required = Vec<(usize, String)>;

    /// Step lists over `a BIGINT, b BIGINT, c STRING` for [`batch_gives_what_records_give`]:
    /// filters that drop and fail, a projection in place whose computed columns fail, a required
    /// column that can be NULL, and projections that rearrange the records in place (narrower
    /// than the input, as wide, wider; columns kept in place, copied, moved, not read later;
    /// required ones computed or moved), each with the output columns read later.
    fn batch_shapes() -> Vec<(Vec<Step>, Vec<bool>, Required)> {
        let s = schema();
        // every output column read later
        let all = |n: usize| vec![true; n];
        let in_place = |extra: Vec<PipelineExpr>| {
            let mut items = vec![expr(&col("a"), &s, "a"), expr(&col("b"), &s, "b"), expr(&col("c"), &s, "c")];
            items.extend(extra);
            Step::Project(items)
        };
        let gt = |l: Syntax, v: i64| expr(&bin(BinaryOp::Gt, l, int(v)), &s, "f");
        let twice = || expr(&bin(BinaryOp::Multiply, col("a"), int(2)), &s, "twice");
        let q = || expr(&bin(BinaryOp::Divide, int(10), col("b")), &s, "q");
        let r = || expr(&bin(BinaryOp::Divide, col("b"), col("a")), &s, "r");
        vec![
            (vec![Step::Filter(gt(col("a"), -2)), in_place(vec![twice(), q()])], all(5), vec![]),
            // a filter that fails (b = 0), then two filters, then two computed columns that can
            // fail on the same record; `twice` required (NULL when `a` is)
            (
                vec![
                    Step::Filter(gt(bin(BinaryOp::Divide, int(10), col("b")), -100)),
                    Step::Filter(gt(col("a"), -3)),
                    in_place(vec![q(), r(), twice()]),
                ],
                all(6),
                vec![(5, "twice".into())],
            ),
            (vec![Step::Filter(gt(col("b"), 0))], all(3), vec![(0, "a".into())]),
            (vec![Step::Filter(gt(col("a"), 0)), Step::Project(vec![expr(&col("b"), &s, "b"), q()])], all(2), vec![]),
            // projections that rearrange the records in place: the input's columns reordered
            // among computed ones (`q` written into its spare slot, then `r` fails or is a
            // NULL where one is not allowed on the same record), a column selected twice
            // (copied, then moved), every column replaced by a computed one
            (
                vec![
                    Step::Filter(gt(col("a"), -3)),
                    Step::Project(vec![expr(&col("c"), &s, "c"), twice(), expr(&col("b"), &s, "b"), q(), r()]),
                ],
                all(5),
                vec![(4, "r".into())],
            ),
            (
                vec![Step::Project(vec![
                    expr(&col("b"), &s, "b1"),
                    r(),
                    expr(&col("a"), &s, "a"),
                    expr(&col("b"), &s, "b2"),
                ])],
                all(4),
                vec![],
            ),
            (
                vec![Step::Filter(gt(col("b"), -2)), Step::Project(vec![twice(), q(), r()])],
                all(3),
                vec![(2, "r".into())],
            ),
            // narrower: the last input column first, `a` and `b` dropped after `twice` read `a`
            (vec![Step::Project(vec![expr(&col("c"), &s, "c"), twice()])], all(2), vec![(1, "twice".into())]),
            // after a filter that fails: the input's columns in place, `c` and `a` copied from
            // their places, the copy of `a` required
            (
                vec![
                    Step::Filter(gt(bin(BinaryOp::Divide, int(10), col("b")), -100)),
                    Step::Project(vec![
                        expr(&col("a"), &s, "a"),
                        expr(&col("b"), &s, "b"),
                        expr(&col("c"), &s, "c"),
                        expr(&col("c"), &s, "c2"),
                        expr(&col("a"), &s, "a2"),
                    ]),
                ],
                all(5),
                vec![(4, "a2".into())],
            ),
            // an item not read later (`c`, NULL in its own slot), `a` moved and required
            (
                vec![Step::Project(vec![
                    twice(),
                    expr(&col("b"), &s, "b"),
                    expr(&col("c"), &s, "c"),
                    expr(&col("a"), &s, "a"),
                    q(),
                ])],
                vec![true, true, false, true, true],
                vec![(3, "a".into())],
            ),
            // narrower after a filter that fails: `b` and `a` swapped, `a` required
            (
                vec![
                    Step::Filter(gt(bin(BinaryOp::Divide, int(10), col("b")), -100)),
                    Step::Project(vec![expr(&col("b"), &s, "b"), expr(&col("a"), &s, "a")]),
                ],
                all(2),
                vec![(1, "a".into())],
            ),
        ]
    }

    proptest::proptest! {
        /// A batch through `apply_batch` keeps what `apply` keeps, record by record, in order,
        /// and rejects the others with what `apply` makes of them, at their index.
        #[test]
        fn batch_gives_what_records_give(
            shape in 0usize..11,
            rows in proptest::collection::vec((proptest::option::of(-3i64..3), proptest::option::of(-2i64..2)), 0..40),
        ) {
            let (steps, needed, required) = &batch_shapes()[shape];
            let (c, _) = CompiledSteps::new(steps, 3, needed, required.clone());
            let make = |(a, b): &(Option<i64>, Option<i64>)| {
                let mut v = vec![a.map_or(Value::Null, Value::Long), b.map_or(Value::Null, Value::Long), Value::Str("x".into())];
                v.resize(3 + c.spare_columns(), Value::Null);
                Record::new(v)
            };
            let mut expected_kept = Vec::new();
            let mut expected_rejected = Vec::new();
            for (i, row) in rows.iter().enumerate() {
                match c.apply(make(row)) {
                    Applied::Keep(r) => expected_kept.push(r),
                    other => expected_rejected.push((i, other)),
                }
            }
            let mut scratch = BatchScratch::default();
            // twice, so that the second batch runs on grown buffers, and with the first one's
            // records handed back for a narrower select to reuse
            for _ in 0..2 {
                let mut batch: Vec<Record> = rows.iter().map(make).collect();
                let mut rejected = Vec::new();
                c.apply_batch(&mut batch, &mut scratch, |i, a| rejected.push((i, a)));
                proptest::prop_assert_eq!(&batch, &expected_kept);
                let kept: Vec<usize> = (0..rows.len()).filter(|i| !rejected.iter().any(|(r, _)| r == i)).collect();
                proptest::prop_assert_eq!(scratch.kept().iter().map(|&i| i as usize).collect::<Vec<_>>(), kept);
                proptest::prop_assert_eq!(&rejected, &expected_rejected);
                // a narrower select gives back each kept record as given, emptied
                let emptied: Vec<Record> = scratch.emptied().collect();
                let cut = if c.narrows_to().is_some() { batch.len() } else { 0 };
                proptest::prop_assert_eq!(emptied.len(), cut);
                let null = make(&(None, None));
                proptest::prop_assert!(emptied.iter().all(|r| r.values.len() == null.values.len() && r.values.iter().all(Value::is_null)));
                if let Some(width) = c.narrows_to() {
                    proptest::prop_assert!(batch.iter().all(|r| r.values.len() == width));
                }
                // as the source actor hands them back: the kept records, and one of another
                // width (taken first)
                scratch.narrow_records().append(&mut batch);
                scratch.narrow_records().push(Record::new(vec![Value::Long(7); 5]));
            }
        }
    }

    /// `apply_row` gives what `apply` gives, row by row, with the buffers reused.
    #[test]
    fn rows_in_place_give_what_records_give_and_keep_failed_rows_as_given() {
        let (c, _) = CompiledSteps::new(&steps(), 3, &[true, true], vec![]);
        let mut scratch = Vec::new();
        for (a, b) in [(3, 2), (-1, 1), (1, 0), (8, 4)] {
            let mut row = rec(a, b).values.into_vec();
            let got = c.apply_row(&mut row, &mut scratch);
            match c.apply(rec(a, b)) {
                Applied::Keep(r) => {
                    assert_eq!(got, RowApplied::Keep);
                    assert_eq!(row, r.values.into_vec());
                }
                Applied::Drop => {
                    assert_eq!(got, RowApplied::Drop);
                    assert_eq!(row, rec(a, b).values.into_vec());
                }
                Applied::Failed { reason, input } => {
                    assert_eq!(got, RowApplied::Failed(reason, "t".into()));
                    assert_eq!(row, input.values.into_vec());
                }
            }
            assert!(scratch.is_empty());
        }
    }

    /// A row's failure names the field of the step that failed: a SQL query's HAVING or select
    /// list (`query.sql`), or the sink's `select` after them (`sink.select`, an item's index
    /// left out), on both of `apply_row`'s paths.
    #[test]
    fn a_failed_row_names_the_field_of_the_step_that_failed() {
        let s = schema();
        let at = |field: &str, e: PipelineExpr| PipelineExpr { field: field.into(), ..e };
        let having = Step::Filter(at(
            "query.sql",
            expr(&bin(BinaryOp::Gt, bin(BinaryOp::Divide, int(10), col("a")), int(1)), &s, "h"),
        ));
        let select = |field: &str| {
            Step::Project(vec![
                at(field, expr(&col("a"), &s, "a")),
                at(field, expr(&bin(BinaryOp::Divide, int(100), col("b")), &s, "q")),
            ])
        };
        let label = |steps: &[Step], a: i64, b: i64| {
            let (c, _) = CompiledSteps::new(steps, 3, &[true; 3], vec![]);
            let mut row = rec(a, b).values.into_vec();
            match c.apply_row(&mut row, &mut Vec::new()) {
                RowApplied::Failed(_, field) => field.to_string(),
                other => format!("{other:?}"),
            }
        };
        // filters then one projection (the fast path)
        let sql_only = [having.clone(), select("query.sql")];
        assert_eq!(label(&sql_only, 0, 1), "query.sql");
        assert_eq!(label(&sql_only, 1, 0), "query.sql");
        // the sink's select after the SQL's: two projections, the record path
        let out = Schema::parse_ddl("a BIGINT, q DOUBLE").unwrap();
        let sink_after = [
            having.clone(),
            select("query.sql"),
            Step::Project(vec![
                at("sink.select[0]", expr(&col("a"), &out, "a")),
                at("sink.select[1]", expr(&col("q"), &out, "q")),
                at(
                    "sink.select[2]",
                    expr(&bin(BinaryOp::Divide, int(7), bin(BinaryOp::Minus, col("a"), int(5))), &out, "r"),
                ),
            ]),
        ];
        assert_eq!(label(&sink_after, 0, 1), "query.sql");
        assert_eq!(label(&sink_after, 1, 0), "query.sql");
        assert_eq!(label(&sink_after, 5, 1), "sink.select");
        assert_eq!(label(&sink_after, -20, 1), "Drop");
        let sink_only = [Step::Project(vec![
            at("sink.select[0]", expr(&col("a"), &s, "a")),
            at("sink.select[1]", expr(&bin(BinaryOp::Divide, int(100), col("b")), &s, "q")),
        ])];
        assert_eq!(label(&sink_only, 1, 0), "sink.select");
    }

    /// A row's columns kept where they are and computed ones written over, after, or (the row
    /// shorter) cut: each computed value reads the row as it came.
    #[test]
    fn rows_keep_their_columns_in_place_and_computed_ones_read_the_row_as_it_came() {
        let s = schema();
        // `a AS x, a + b AS b, b * 2 AS c2`: `c2` reads the incoming `b`, not `a + b`
        let steps = vec![Step::Project(vec![
            expr(&col("a"), &s, "x"),
            expr(&bin(BinaryOp::Plus, col("a"), col("b")), &s, "b"),
            expr(&bin(BinaryOp::Multiply, col("b"), int(2)), &s, "c2"),
            expr(&bin(BinaryOp::Minus, col("b"), int(1)), &s, "d"),
        ])];
        let (c, _) = CompiledSteps::new(&steps, 3, &[true; 4], vec![]);
        let mut scratch = Vec::new();
        let mut row = rec(3, 4).values.into_vec();
        assert_eq!(c.apply_row(&mut row, &mut scratch), RowApplied::Keep);
        assert_eq!(row, vec![Value::Long(3), Value::Long(7), Value::Long(8), Value::Long(3)]);
        let short = vec![Step::Project(vec![
            expr(&col("a"), &s, "a"),
            expr(&bin(BinaryOp::Divide, col("a"), col("b")), &s, "q"),
        ])];
        let (c, _) = CompiledSteps::new(&short, 3, &[true; 2], vec![]);
        let mut row = rec(3, 4).values.into_vec();
        assert_eq!(c.apply_row(&mut row, &mut scratch), RowApplied::Keep);
        assert_eq!(row, vec![Value::Long(3), Value::Double(0.75)]);
        // a failure leaves the row as it came
        let mut row = rec(3, 0).values.into_vec();
        assert_eq!(
            c.apply_row(&mut row, &mut scratch),
            RowApplied::Failed("DIVIDE_BY_ZERO in \"(a / b)\"".into(), "t".into())
        );
        assert_eq!(row, rec(3, 0).values.into_vec());
    }
}
