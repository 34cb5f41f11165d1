//! The 36 level tools — list, get, create, update, close and delete for each of the six levels
//! — as one handler per (level, operation) that reads the level table (`crate::level`): its
//! schema and its checks come from the level's rules and the shared argument types
//! (`crate::args`), so no level has a copy of another's tool.
//!
//! Invariants:
//! - A level tool only touches items of its level: an id of another level is refused naming
//!   the tool that takes it.
//! - Update never closes: `status: done` or `cancelled` is refused pointing at the close tool
//!   (which has the descendant rules); any other status on a closed item reopens it.
//! - Every write is one transaction and is logged in the activity feed.

use coremcp_plugin_sdk::args::{invalid, take, take_required, Clearable, ObjectSchema, ToolArgs};
use coremcp_plugin_sdk::budget::{self, bulk, fit_array, result_budget};
use coremcp_plugin_sdk::page::{encode_cursor, Paging};
use coremcp_plugin_sdk::{codes, Ctx, Handler, Hints, Tool, ToolError};
use coremcp_store::plugin::{json_text, json_value, TxError};
use coremcp_store::query::Query;
use coremcp_store::records::{check_expected, expected, hold, patch, touch, Key, Order};
use coremcp_store::{BackendKind, Param, Row, Tx};
use serde_json::{json, Map, Value};

use crate::args::{
    AgentName, CloseArgs, DeleteArgs, GetArgs, ItemFields, ItemId, ListArgs, Priority, Status,
    Text, Title, Token,
};
use crate::items::{self, NewItem, CLOSED};
use crate::level::{KeyArg, KeyRule, Level};
use crate::{views, SERVICE};

/// What a level tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    List,
    Get,
    Create,
    Update,
    Close,
    Delete,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::List => "list",
            Op::Get => "get",
            Op::Create => "create",
            Op::Update => "update",
            Op::Close => "close",
            Op::Delete => "delete",
        }
    }
}

/// One level tool.
#[derive(Debug)]
pub struct LevelTool {
    pub level: Level,
    pub op: Op,
}

impl LevelTool {
    fn tool(&self, op: Op) -> String {
        format!("scrolls_{}_{}", self.level.as_str(), op.as_str())
    }

    /// Whether the level keeps the full ItemFields (the numbered levels) or the few a theme or
    /// project has.
    fn numbered(&self) -> bool {
        self.level.rules().key == KeyRule::Sequence
    }

    fn describe_schema(&self) -> Value {
        let mut o = ObjectSchema::default();
        let key = |o: &mut ObjectSchema, arg: &KeyArg| {
            o.property::<ItemId>(arg.name, arg.description, &[], Some(arg.required));
        };
        match self.op {
            Op::List => {
                self.level
                    .rules()
                    .list_filters
                    .iter()
                    .for_each(|a| key(&mut o, a));
                o.flatten::<ListArgs>();
            }
            Op::Get => o.flatten::<GetArgs>(),
            Op::Close => o.flatten::<CloseArgs>(),
            Op::Delete => o.flatten::<DeleteArgs>(),
            Op::Create | Op::Update => {
                let create = self.op == Op::Create;
                match (create, self.level.rules().key) {
                    (true, KeyRule::Slug) => {
                        o.property::<ItemId>("key", "e.g. reliability", &[], Some(true))
                    }
                    (true, KeyRule::ProjectKey) => o.property::<ItemId>(
                        "key",
                        "^[A-Z][A-Z0-9]{1,9}$, the Registry project's key",
                        &[],
                        Some(true),
                    ),
                    (true, KeyRule::Sequence) => {}
                    (false, _) => o.property::<ItemId>("id", "item key", &[], Some(true)),
                }
                if let Some(parent) = self.level.rules().parent_arg.as_ref() {
                    // Moving is scrolls_item_move's; only a project's theme is patched here.
                    if create || self.level == Level::Project {
                        key(
                            &mut o,
                            &KeyArg {
                                required: create && parent.required,
                                ..*parent
                            },
                        );
                    }
                }
                let title = if create { "what it is" } else { "new title" };
                o.property::<Title>("title", title, &[("maxLength", json!(200))], Some(create));
                if self.numbered() {
                    o.flatten::<ItemFields>();
                } else {
                    o.property::<Text>(
                        "description",
                        "Markdown",
                        &[("maxLength", json!(20000))],
                        Some(false),
                    );
                    o.property::<Priority>("priority", "default none", &[], Some(false));
                    if !create {
                        o.property::<Status>("status", "done/cancelled close", &[], Some(false));
                    }
                }
                match self.level {
                    Level::Theme if create => o.property::<Token>(
                        "registry_theme",
                        "default: own key if in Registry",
                        &[],
                        Some(false),
                    ),
                    Level::Project => {
                        o.property::<AgentName>("lead", "agent name", &[], Some(false))
                    }
                    Level::Story => o.property::<Vec<Text>>(
                        "acceptance_criteria",
                        "replaces all",
                        &[("maxItems", json!(50))],
                        Some(false),
                    ),
                    _ => {}
                }
                if !create {
                    o.property::<u64>(
                        "expected_version",
                        "version read",
                        &[("minimum", json!(1))],
                        Some(false),
                    );
                }
            }
        }
        let mut schema = o.finish();
        // An item's key, by the example of its level's form.
        if let Some(id) = schema.pointer_mut("/properties/id/description") {
            *id = json!(self.level.key_example());
        }
        schema
    }
}

impl Handler for LevelTool {
    fn schema(&self) -> Value {
        self.describe_schema()
    }

    fn call(&self, _: &Ctx<'_>, mut args: Map<String, Value>) -> Result<Value, ToolError> {
        match self.op {
            Op::List => self.list(&mut args),
            Op::Get => {
                let get = GetArgs::parse_at(&mut args, "")?;
                SERVICE.read(|tx| self.get(tx, &get))
            }
            Op::Create => self.create(&mut args),
            Op::Update => self.update(&mut args),
            Op::Close => {
                let close = CloseArgs::parse_at(&mut args, "")?;
                SERVICE.run(|tx| {
                    let key = close.id.as_str();
                    self.of_level(&items::find(tx, "id", key)?)?;
                    let actor = crate::actor::of(tx, None)?;
                    let actor = actor.as_deref();
                    let closed = items::close(tx, key, close.resolution, close.cascade, actor)?;
                    if let Some(comment) = &close.comment {
                        items::comment(tx, key, actor, comment.as_str())?;
                    }
                    // The closed keys are a sample at most: room for the item is what is left.
                    let item =
                        items::answer(&items::find(tx, "id", key)?, 0, result_budget() - 5_000)?;
                    let mut out = json!({ "item": item });
                    bulk(&mut out, "closed", closed);
                    Ok(out)
                })
            }
            Op::Delete => {
                let delete = DeleteArgs::parse_at(&mut args, "")?;
                SERVICE.run(|tx| {
                    self.of_level(&items::find(tx, "id", delete.id.as_str())?)?;
                    let actor = crate::actor::of(tx, None)?;
                    let deleted =
                        items::delete(tx, delete.id.as_str(), delete.cascade, actor.as_deref())?;
                    let mut out = json!({});
                    bulk(&mut out, "deleted", deleted);
                    Ok(out)
                })
            }
        }
    }
}

impl LevelTool {
    /// Refuses an item of another level, naming the tool that takes it.
    fn of_level(&self, row: &Row) -> Result<(), TxError> {
        let level = items::level_of(row)?;
        if level == self.level {
            return Ok(());
        }
        let key = row.get_text("key")?;
        let tool = LevelTool { level, op: self.op }.tool(self.op);
        Err(invalid(
            "id",
            format!(
                "{key} is {} {}, not {} {}: use {tool}",
                level.article(),
                level.as_str(),
                self.level.article(),
                self.level.as_str()
            ),
        )
        .into())
    }

    fn list(&self, args: &mut Map<String, Value>) -> Result<Value, ToolError> {
        let mut filters = Vec::new();
        for filter in self.level.rules().list_filters {
            let value: Option<ItemId> = if filter.required {
                Some(take_required(args, filter.name, "")?)
            } else {
                take(args, filter.name, "")?
            };
            if let Some(value) = value {
                filters.push((filter.name, value));
            }
        }
        let list = ListArgs::parse_at(args, "")?;
        let level = self.level;
        SERVICE.read(|tx| {
            // An agent nobody registered is a mistake to name, not an empty list.
            if let Some(agent) = &list.assignee {
                crate::agents::AGENT.find(tx, "assignee", &[agent.as_str()])?;
            }
            let mut q = Query::new();
            q.eq("i.level", level.as_str());
            for (name, key) in &filters {
                let id = items::find(tx, name, key.as_str())?.get_text("id")?;
                let p = q.bind(id);
                q.and(match *name {
                    "project" => format!("i.project_id = {p}"),
                    // An epic's theme is its project's.
                    "theme" if level == Level::Epic => {
                        format!(
                            "i.project_id IN (SELECT id FROM scrolls_item WHERE parent_id = {p})"
                        )
                    }
                    _ => format!("i.parent_id = {p}"),
                });
            }
            list_filter(tx.kind(), &mut q, &list);
            // Creation order: ids made by one process sort so.
            const KEYS: &[Key] = &[Key::text("i.id", "id")];
            let mut page = Order::asc(level.as_str(), KEYS).list(
                tx,
                items::SELECT,
                &q,
                &list.page,
                items::listed_json,
            )?;
            if level == Level::Theme {
                project_counts(tx, &mut page)?;
            }
            Ok(page)
        })
    }

    fn get(&self, tx: &mut Tx<'_>, get: &GetArgs) -> Result<Value, TxError> {
        /// The most a list beside the description takes before the description is fitted.
        const LIST_SHARE: usize = 6_000;
        let row = items::find(tx, "id", get.id.as_str())?;
        self.of_level(&row)?;
        let item_id = row.get_text("id")?;
        // Around the description: its dependencies whole, and a share each for the children
        // and the first comments (whole ones, from the start); the description takes the rest.
        let mut around = json!({});
        if let Some(deps) = dependencies(tx, &item_id)? {
            around["depends_on"] = deps;
        }
        if get
            .include_children
            .unwrap_or(self.level.rules().children_by_default)
        {
            around["children"] = Value::Array(children(tx, &item_id, get.depth)?);
        }
        let mut comments_total = 0;
        if get.include_comments {
            let page = Paging {
                limit: 20,
                cursor: None,
            };
            around["comments"] = views::comments(tx, &item_id, &page)?["items"].clone();
            comments_total = views::comment_count(tx, &item_id)?;
        }
        let mut omitted = Map::new();
        for list in ["comments", "children"] {
            if around.get(list).is_some() {
                let mut share = json!({list: around[list].take()});
                let left_out = fit_array(&mut share, list, LIST_SHARE);
                around[list] = share[list].take();
                if left_out > 0 {
                    omitted.insert(format!("{list}_omitted"), left_out.into());
                }
            }
        }
        let room = (result_budget() - 200)
            .saturating_sub(budget::chars(&around))
            .max(2_000);
        let mut item = items::answer(&row, get.offset, room)?;
        if let (Some(item_map), Value::Object(around)) = (item.as_object_mut(), around) {
            item_map.extend(around);
            item_map.extend(omitted);
        }
        if get.include_comments {
            item["comments_total"] = comments_total.into();
        }
        // A guard: whatever still outgrows the answer is left out whole from the end.
        for list in ["comments", "children", "depends_on"] {
            let left_out = fit_array(&mut item, list, result_budget() - 200);
            if left_out > 0 {
                let before = item[format!("{list}_omitted")].as_u64().unwrap_or(0);
                item[format!("{list}_omitted")] = (before + left_out as u64).into();
            }
        }
        // Where the comments read on: scrolls_comment_list with this cursor, after the last shown.
        let shown = item["comments"].as_array().map_or(0, Vec::len);
        if shown < comments_total {
            if let Some(last) = item["comments"][shown.saturating_sub(1)]["id"].as_str() {
                let cursor = encode_cursor(&["comments", last]);
                item["comments_next_cursor"] = cursor.into();
            }
        }
        Ok(item)
    }

    fn create(&self, args: &mut Map<String, Value>) -> Result<Value, ToolError> {
        let key = self.new_key(args)?;
        let parent_arg = self.level.rules().parent_arg.as_ref();
        let parent: Option<(&str, ItemId)> = match &parent_arg {
            Some(arg) => take::<Option<ItemId>>(args, arg.name, "")?.map(|p| (arg.name, p)),
            None => None,
        };
        let (title, extras) = (
            take_required::<Title>(args, "title", "")?,
            Extras::take(args)?,
        );
        let fields = if self.numbered() {
            Some(ItemFields::parse_at(args, "")?)
        } else {
            None
        };
        let common = Common::take(args, fields.as_ref())?;
        if let Some(Status::Done | Status::Cancelled) = common.status {
            return Err(invalid(
                "status",
                "a new item is not closed: create it, then close it",
            ));
        }
        let level = self.level;
        // Asked of the Registry before the transaction: another service's store.
        let registry = match level {
            Level::Theme => registry_theme(
                extras.registry_theme.as_ref().map(Token::as_str),
                key.as_ref().map(ItemId::as_str),
            )?,
            _ => None,
        };
        SERVICE.run(|tx| {
            let parent_key = parent.as_ref().map(|(name, p)| (*name, p.key()));
            if let Some(key) = &key {
                check_key_kind(level, key)?;
            }
            let item = NewItem {
                level,
                key: key.as_ref().map(ItemId::as_str),
                parent: parent_key.as_ref().map(|(name, key)| (*name, key)),
                title: title.as_str(),
                priority: common.priority.map_or("none", Priority::as_str),
            };
            let mut columns = common.columns(tx, None, &extras)?;
            if level == Level::Theme {
                columns.push(("registry_key", registry.clone().map(Into::into)));
            }
            let row = items::create(tx, &item, columns)?;
            let (id, key) = (row.get_text("id")?, row.get_text("key")?);
            if let Some(deps) = &common.depends_on {
                let on = ids_of(tx, deps)?;
                items::set_dependencies(tx, "depends_on", (&id, &key), &on)?;
            }
            let actor = crate::actor::of(tx, None)?;
            items::log(tx, "created", (Some(&id), &key), actor.as_deref(), None)?;
            Ok(items::answer(&row, 0, result_budget())?)
        })
    }

    /// The `key` a theme or a project is created with, checked by its own level's rule (a
    /// theme's slug, a project's key), so the refusal names the rule that applies.
    fn new_key(&self, args: &mut Map<String, Value>) -> Result<Option<ItemId>, ToolError> {
        let Some(text) = take::<Option<String>>(args, "key", "")? else {
            return Ok(None);
        };
        match self.level.rules().key {
            KeyRule::Slug => coremcp_plugin_sdk::rules::slug(
                "key",
                &text,
                "theme key",
                crate::key::MAX_THEME_KEY,
                "-",
                "reliability",
            )?,
            KeyRule::ProjectKey => coremcp_plugin_sdk::rules::project_key("key", &text)?,
            KeyRule::Sequence => {}
        }
        let id: ItemId = coremcp_plugin_sdk::args::ArgType::from_value(json!(text), "key")
            .map_err(ToolError::from)?;
        Ok(Some(id))
    }

    fn update(&self, args: &mut Map<String, Value>) -> Result<Value, ToolError> {
        let id: ItemId = take_required(args, "id", "")?;
        let theme: Option<Clearable<ItemId>> = if self.level == Level::Project {
            take(args, "theme", "")?
        } else {
            None
        };
        let title: Option<Title> = take(args, "title", "")?;
        let extras = Extras::take(args)?;
        let fields = if self.numbered() {
            Some(ItemFields::parse_at(args, "")?)
        } else {
            None
        };
        let common = Common::take(args, fields.as_ref())?;
        let version: Option<u64> = take(args, "expected_version", "")?;
        let close = self.tool(Op::Close);
        if let Some(status @ (Status::Done | Status::Cancelled)) = common.status {
            return Err(invalid(
                "status",
                format!(
                    "{} closes an item with its rules for what is under it: use {close}",
                    status.as_str()
                ),
            ));
        }
        SERVICE.run(|tx| {
            let row = items::find(tx, "id", id.as_str())?;
            self.of_level(&row)?;
            let (item_id, key) = (row.get_text("id")?, row.get_text("key")?);
            let what = format!("{} {key}", self.level.as_str());
            let expected = expected(version);
            check_expected(&what, row.get_i64("version")?, expected)?;
            let mut changes = common.columns(tx, Some(&row), &extras)?;
            changes.push(("title", title.as_ref().map(|t| t.as_str().into())));
            // Any status but a closed one (refused above) reopens a closed item.
            let reopened = common.status.is_some()
                && matches!(row.get_text("status")?.as_str(), "done" | "cancelled");
            if reopened {
                changes.extend([
                    ("resolution", Some(Param::Null)),
                    ("closed_at", Some(Param::Null)),
                ]);
            }
            if let Some(theme) = &theme {
                let parent = match theme.value() {
                    Some(theme) => Some(items::find(tx, "theme", theme.as_str())?),
                    None => None,
                };
                if let Some(parent) = &parent {
                    if items::level_of(parent)? != Level::Theme {
                        return Err(invalid(
                            "theme",
                            format!("{} is not a theme", theme_key(theme)),
                        )
                        .into());
                    }
                }
                changes.push((
                    "parent_id",
                    Some(parent.map(|p| p.get_text("id")).transpose()?.into()),
                ));
            }
            let changed = patch(tx, "scrolls_item", &row, &what, expected, changes)?;
            // Dependencies live in their own table: a change of them alone moves the item's
            // version too, so a second writer at the same version gets a conflict.
            let mut relinked = false;
            if let Some(deps) = &common.depends_on {
                let on = ids_of(tx, deps)?;
                let mut wanted = on.clone();
                wanted.sort();
                wanted.dedup();
                if !changed {
                    // The dependencies read next are then those of the version read.
                    hold(tx, "scrolls_item", &row, &what, expected)?;
                }
                if items::dependency_ids(tx, &item_id)? != wanted {
                    if !changed {
                        touch(tx, "scrolls_item", &row, &what, expected)?;
                    }
                    items::set_dependencies(tx, "depends_on", (&item_id, &key), &on)?;
                    relinked = true;
                }
            }
            if changed || relinked {
                let action = if reopened { "reopened" } else { "updated" };
                let actor = crate::actor::of(tx, None)?;
                items::log(tx, action, (Some(&item_id), &key), actor.as_deref(), None)?;
            }
            Ok(items::answer(
                &items::find(tx, "key", &key)?,
                0,
                result_budget(),
            )?)
        })
    }
}

/// The Registry theme a new Scrolls theme records: the one named (`registry_theme`), which
/// must exist when the Registry can be asked, else the theme's own key when the Registry has
/// it. When the Registry cannot be asked (not in this build, not reachable from the Scrolls
/// service, or taken away by the grants), the named key, else the theme's own, is recorded
/// unchecked, as before the Registry existed.
fn registry_theme(named: Option<&str>, own: Option<&str>) -> Result<Option<String>, ToolError> {
    let Some(wanted) = named.or(own) else {
        return Ok(None);
    };
    let payload = json!({"tool": "registry_theme_list", "args": {"key": wanted, "status": "all"}});
    let found = match coremcp_plugin_sdk::host_call("registry.call", &payload) {
        Ok(answer) => answer["items"].as_array().is_some_and(|t| !t.is_empty()),
        Err(_) => return Ok(Some(wanted.to_owned())),
    };
    match (found, named) {
        (true, _) => Ok(Some(wanted.to_owned())),
        (false, Some(named)) => Err(invalid(
            "registry_theme",
            format!(
                "the Registry has no theme {named} (registry_theme_list shows them; \
                 registry_theme_add adds one)"
            ),
        )),
        (false, None) => Ok(None),
    }
}

/// Adds each listed theme's open and closed project counts (`projects_open`,
/// `projects_closed`), in one query for the page.
fn project_counts(tx: &mut Tx<'_>, page: &mut Value) -> Result<(), TxError> {
    let Some(themes) = page["items"].as_array_mut() else {
        return Ok(());
    };
    let keys: Vec<String> = themes
        .iter()
        .filter_map(|t| t["key"].as_str().map(str::to_owned))
        .collect();
    if keys.is_empty() {
        return Ok(());
    }
    let mut q = Query::new();
    let list = q.in_list(&keys);
    let rows = tx.query(
        &format!(
            "SELECT t.key, \
             SUM(CASE WHEN p.status IN {CLOSED} THEN 0 ELSE 1 END) AS open, \
             SUM(CASE WHEN p.status IN {CLOSED} THEN 1 ELSE 0 END) AS closed \
             FROM scrolls_item t JOIN scrolls_item p ON p.parent_id = t.id \
             WHERE t.key IN {list} GROUP BY t.key"
        ),
        q.params(),
    )?;
    let mut counts = std::collections::HashMap::new();
    for row in &rows {
        counts.insert(
            row.get_text("key")?,
            (row.get_i64("open")?, row.get_i64("closed")?),
        );
    }
    for theme in themes.iter_mut() {
        let key = theme["key"].as_str().unwrap_or_default();
        let (open, closed) = counts.get(key).copied().unwrap_or((0, 0));
        theme["projects_open"] = open.into();
        theme["projects_closed"] = closed.into();
    }
    Ok(())
}

fn theme_key(theme: &Clearable<ItemId>) -> String {
    theme
        .value()
        .map_or_else(String::new, |t| t.as_str().to_owned())
}

/// A given key must be of the level's own kind (`reliability` for a theme, `CORE` for a project).
fn check_key_kind(level: Level, key: &ItemId) -> Result<(), TxError> {
    if key.key().levels().contains(&level) {
        return Ok(());
    }
    Err(invalid(
        "key",
        format!("{} is not a {} key", key.as_str(), level.as_str()),
    )
    .into())
}

/// The item ids of `keys` (argument `depends_on`), each of which must exist.
fn ids_of(tx: &mut Tx<'_>, keys: &[ItemId]) -> Result<Vec<String>, TxError> {
    keys.iter()
        .enumerate()
        .map(|(i, key)| {
            Ok(items::find(tx, &format!("depends_on[{i}]"), key.as_str())?.get_text("id")?)
        })
        .collect()
}

/// The keys an item depends on, when it has any.
fn dependencies(tx: &mut Tx<'_>, id: &str) -> Result<Option<Value>, TxError> {
    let rows = tx.query(
        "SELECT i.key FROM scrolls_dependency d JOIN scrolls_item i ON i.id = d.depends_on_id \
         WHERE d.item_id = $1 ORDER BY i.key",
        &[id.into()],
    )?;
    let keys: Vec<String> = rows
        .iter()
        .map(|r| r.get_text("key"))
        .collect::<Result<_, _>>()?;
    Ok((!keys.is_empty()).then(|| json!(keys)))
}

/// The children of item `id` to `depth` levels, each with its own `children` below the first.
fn children(tx: &mut Tx<'_>, id: &str, depth: u32) -> Result<Vec<Value>, TxError> {
    const BRIEF: &str = "key level title status priority assignee=assignee_name? \
        estimate?:num due_date?";
    let rows = tx.query(
        &format!(
            "{} WHERE i.parent_id = $1 ORDER BY (i.position IS NULL), i.position, i.id",
            items::SELECT
        ),
        &[id.into()],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut child = coremcp_store::records::Record::of(row, BRIEF)?.done();
        if depth > 1 {
            let below = children(tx, &row.get_text("id")?, depth - 1)?;
            if !below.is_empty() {
                child["children"] = Value::Array(below);
            }
        }
        out.push(child);
    }
    Ok(out)
}

/// ListArgs as conditions on `scrolls_item i`.
fn list_filter(kind: BackendKind, q: &mut Query, list: &ListArgs) {
    if list.status.is_empty() {
        if !list.include_closed {
            q.and(format!("i.status NOT IN {CLOSED}"));
        }
    } else {
        let statuses: Vec<String> = list.status.iter().map(|s| s.as_str().to_owned()).collect();
        let marks = q.in_list(&statuses);
        q.and(format!("i.status IN {marks}"));
    }
    if let Some(agent) = &list.assignee {
        let p = q.bind(agent.as_str());
        q.and(format!(
            "i.assignee_id = (SELECT id FROM scrolls_agent WHERE name = {p})"
        ));
    }
    if let Some(label) = &list.label {
        let p = q.bind(label.as_str());
        q.and(match kind {
            BackendKind::Sqlite => {
                format!("EXISTS (SELECT 1 FROM json_each(i.labels) l WHERE l.value = {p})")
            }
            BackendKind::Postgres => format!("i.labels @> jsonb_build_array(CAST({p} AS TEXT))"),
        });
    }
    q.eq_opt("i.priority", list.priority.map(Priority::as_str));
    q.contains(&["i.title"], list.query.as_deref());
}

/// The most characters a story's acceptance criteria hold in all.
pub const MAX_CRITERIA_CHARS: usize = 8_000;

/// The level-specific fields of create and update.
#[derive(Default)]
struct Extras {
    registry_theme: Option<Token>,
    lead: Option<AgentName>,
    acceptance_criteria: Option<Vec<Text>>,
}

impl Extras {
    fn take(args: &mut Map<String, Value>) -> Result<Self, ToolError> {
        let criteria: Option<Vec<Text>> = take(args, "acceptance_criteria", "")?;
        let chars: usize = criteria
            .iter()
            .flatten()
            .map(|c| c.as_str().chars().count())
            .sum();
        // So that a story's answer always has room for them whole beside its description.
        if chars > MAX_CRITERIA_CHARS {
            return Err(invalid(
                "acceptance_criteria",
                format!(
                    "holds {chars} characters in all; the limit is {MAX_CRITERIA_CHARS}: keep \
                     each criterion a short checkable line and put detail in the description"
                ),
            ));
        }
        Ok(Self {
            registry_theme: take(args, "registry_theme", "")?,
            lead: take(args, "lead", "")?,
            acceptance_criteria: criteria,
        })
    }
}

/// What create and update write besides the title, from ItemFields or a theme's or project's
/// few fields.
struct Common {
    description: Option<Text>,
    status: Option<Status>,
    priority: Option<Priority>,
    assignee: Option<Clearable<AgentName>>,
    labels: Option<Vec<Token>>,
    due_date: Option<Clearable<crate::args::DueDate>>,
    estimate: Option<f64>,
    depends_on: Option<Vec<ItemId>>,
    external_ref: Option<Clearable<Token>>,
}

impl Common {
    fn take(args: &mut Map<String, Value>, fields: Option<&ItemFields>) -> Result<Self, ToolError> {
        Ok(match fields {
            Some(f) => Self {
                description: f.description.clone(),
                status: f.status,
                priority: f.priority,
                assignee: f.assignee.clone(),
                labels: f.labels.clone(),
                due_date: f.due_date.clone(),
                estimate: f.estimate,
                depends_on: f.depends_on.clone(),
                external_ref: f.external_ref.clone(),
            },
            None => Self {
                description: take(args, "description", "")?,
                status: take(args, "status", "")?,
                priority: take(args, "priority", "")?,
                assignee: None,
                labels: None,
                due_date: None,
                estimate: None,
                depends_on: None,
                external_ref: None,
            },
        })
    }

    /// The columns to write, `None` where the call leaves one alone; JSON columns only when
    /// they differ from `row` as JSON (any, for a new item: no `row`).
    fn columns(
        &self,
        tx: &mut Tx<'_>,
        row: Option<&Row>,
        extras: &Extras,
    ) -> Result<Vec<(&'static str, Option<Param>)>, TxError> {
        let agent = |tx: &mut Tx<'_>, field: &str, name: &AgentName| -> Result<String, TxError> {
            let row = tx.query_opt(
                "SELECT id FROM scrolls_agent WHERE name = $1",
                &[name.as_str().into()],
            )?;
            Ok(row
                .ok_or_else(|| {
                    let name = name.as_str();
                    ToolError::new(
                        codes::NOT_FOUND,
                        format!(
                            "argument \"{field}\": no agent {name} (register it with \
                             scrolls_agent_register)"
                        ),
                    )
                })?
                .get_text("id")?)
        };
        let assignee = match &self.assignee {
            Some(Clearable::Set(name)) => {
                Some(crate::agents::assignable(tx, "assignee", name.as_str())?.into())
            }
            Some(Clearable::Clear) => Some(Param::Null),
            None => None,
        };
        // A project's lead is a field of its own, never its assignee.
        let lead = match &extras.lead {
            Some(lead) => Some(agent(tx, "lead", lead)?.into()),
            None => None,
        };
        let json_column = |column: &str, new: Option<Value>| -> Result<Option<Param>, TxError> {
            Ok(match new {
                Some(new)
                    if json_value(row.map(|r| r.get_opt_text(column)).transpose()?.flatten())
                        != new =>
                {
                    Some(json_text(&new).into())
                }
                _ => None,
            })
        };
        let labels = self
            .labels
            .as_ref()
            .map(|l| json!(l.iter().map(Token::as_str).collect::<Vec<_>>()));
        let criteria = extras
            .acceptance_criteria
            .as_ref()
            .map(|c| json!(c.iter().map(Text::as_str).collect::<Vec<_>>()));
        // Clearing the assignee of a claimed item without naming a status releases the claim:
        // the item is open again, and back in the ready queue.
        let claimed = match row {
            Some(row) => row.get_text("status")? == "in_progress",
            None => false,
        };
        let released = matches!(self.assignee, Some(Clearable::Clear)) && claimed;
        let status = match (self.status, released) {
            (Some(status), _) => Some(status.into()),
            (None, true) => Some("open".into()),
            (None, false) => None,
        };
        Ok(vec![
            (
                "description",
                self.description.as_ref().map(|d| d.as_str().into()),
            ),
            ("status", status),
            ("priority", self.priority.map(Into::into)),
            ("assignee_id", assignee),
            ("lead_id", lead),
            ("labels", json_column("labels", labels)?),
            (
                "due_date",
                self.due_date
                    .as_ref()
                    .map(|d| d.value().map(|d| d.as_str()).into()),
            ),
            ("estimate", self.estimate.map(Into::into)),
            (
                "external_ref",
                self.external_ref
                    .as_ref()
                    .map(|r| r.value().map(Token::as_str).into()),
            ),
            (
                "acceptance_criteria",
                json_column("acceptance_criteria", criteria)?,
            ),
        ])
    }
}

macro_rules! level_tools {
    ($($name:literal $level:ident $op:ident $hints:ident $description:literal;)*) => {
        /// The 36 level tools, in catalog order.
        pub const TOOLS: &[Tool] = &[$(
            Tool::new($name, $description, &LevelTool { level: Level::$level, op: Op::$op })
                .hints(Hints::$hints)
        ),*];
    };
}

level_tools! {
    "scrolls_theme_list" Theme List READ
        "List themes; open unless status or include_closed.";
    "scrolls_theme_get" Theme Get READ
        "Get a theme with its projects.";
    "scrolls_theme_create" Theme Create ADD
        "Create a theme with a permanent slug key.";
    "scrolls_theme_update" Theme Update IDEMPOTENT
        "Patch a theme: only given fields change; status open reopens it.";
    "scrolls_theme_close" Theme Close IDEMPOTENT
        "Close a theme; refused while it has open descendants unless cascade.";
    "scrolls_theme_delete" Theme Delete DESTRUCTIVE
        "Delete a theme; refused while it has children unless cascade.";
    "scrolls_project_list" Project List READ
        "List projects of a theme; open unless status or include_closed.";
    "scrolls_project_get" Project Get READ
        "Get a project with its epics and direct stories and tasks.";
    "scrolls_project_create" Project Create ADD
        "Create a project; its key (the Registry project's) prefixes its items (CORE-1).";
    "scrolls_project_update" Project Update IDEMPOTENT
        "Patch a project: only given fields change (theme \"\" detaches it); status open reopens it.";
    "scrolls_project_close" Project Close IDEMPOTENT
        "Close a project; refused while it has open descendants unless cascade.";
    "scrolls_project_delete" Project Delete DESTRUCTIVE
        "Delete a project; refused while it has items unless cascade.";
    "scrolls_epic_list" Epic List READ
        "List epics of a project or theme; open unless status or include_closed.";
    "scrolls_epic_get" Epic Get READ
        "Get an epic with its stories and tasks.";
    "scrolls_epic_create" Epic Create ADD
        "Create an epic in a project (key CORE-7).";
    "scrolls_epic_update" Epic Update IDEMPOTENT
        "Patch an epic: only given fields change; lists are replaced.";
    "scrolls_epic_close" Epic Close IDEMPOTENT
        "Close an epic; refused while it has open descendants unless cascade.";
    "scrolls_epic_delete" Epic Delete DESTRUCTIVE
        "Delete an epic; refused while it has children unless cascade.";
    "scrolls_story_list" Story List READ
        "List stories of a project or epic; open unless status or include_closed.";
    "scrolls_story_get" Story Get READ
        "Get a story with its criteria, dependencies, and optionally subtasks and comments.";
    "scrolls_story_create" Story Create ADD
        "Create a story under an epic or project; its key is the project's next number.";
    "scrolls_story_update" Story Update IDEMPOTENT
        "Patch a story: only given fields change; lists are replaced.";
    "scrolls_story_close" Story Close IDEMPOTENT
        "Close a story; refused while it has open subtasks unless cascade.";
    "scrolls_story_delete" Story Delete DESTRUCTIVE
        "Delete a story; refused while it has subtasks unless cascade.";
    "scrolls_task_list" Task List READ
        "List tasks of a project or epic; open unless status or include_closed.";
    "scrolls_task_get" Task Get READ
        "Get a task with its dependencies, and optionally subtasks and comments.";
    "scrolls_task_create" Task Create ADD
        "Create a task under an epic or project; its key is the project's next number.";
    "scrolls_task_update" Task Update IDEMPOTENT
        "Patch a task: only given fields change; lists are replaced.";
    "scrolls_task_close" Task Close IDEMPOTENT
        "Close a task; refused while it has open subtasks unless cascade.";
    "scrolls_task_delete" Task Delete DESTRUCTIVE
        "Delete a task; refused while it has subtasks unless cascade.";
    "scrolls_subtask_list" Subtask List READ
        "List a story's or task's subtasks; open unless status or include_closed.";
    "scrolls_subtask_get" Subtask Get READ
        "Get a subtask with its dependencies.";
    "scrolls_subtask_create" Subtask Create ADD
        "Create a subtask under a story or task; its key is the project's next number.";
    "scrolls_subtask_update" Subtask Update IDEMPOTENT
        "Patch a subtask: only given fields change; lists are replaced.";
    "scrolls_subtask_close" Subtask Close IDEMPOTENT
        "Close a subtask (resolution default done); its story or task may then close.";
    "scrolls_subtask_delete" Subtask Delete DESTRUCTIVE
        "Delete a subtask and its comments; its history moves to its parent's feed.";
}
