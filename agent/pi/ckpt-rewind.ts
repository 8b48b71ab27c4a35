// ckpt for pi: checkpoints before every edit, /rewind, undo and redo.
// This file was written by `ckpt install` (`ckpt uninstall pi` removes it).
// It is a thin layer: every rule lives in the ckpt binary, which it runs.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

const CKPT: string[] = CKPT_ARGV;
const STRICT = false;

type Run = { code: number; stdout: string; stderr: string };
type Turn = { turn: number; prompt: string; time: string; files: { path: string; kind: string }[]; steps?: { tool: string; files: { path: string }[] }[] };
type Op = { id: number; kind: string; scope: string; turn: number; next_undo: boolean; next_redo: boolean };
type Plan = { restored: string[]; deleted: string[]; conflicts: string[]; skipped?: string[]; prompt: string; changed: boolean };

const UNDO = "↩ Undo last rewind";
const REDO = "↪ Redo";
const MODES = { both: "Files + conversation", code: "Files only", conversation: "Conversation only" } as const;
const DIFF = "Show the full diff";

export default function (pi: ExtensionAPI) {
	let health = ""; // the last problem the hook reported, for the footer
	let pending: { turn: number; prompt: string } | undefined; // this run's ckpt turn, bound at agent_end
	let navigating = false; // a tree move /rewind makes itself

	const sid = (ctx: ExtensionContext) => ctx.sessionManager.getSessionId();

	const run = (ctx: ExtensionContext, args: string[], input = ""): Promise<Run> =>
		new Promise((resolve) => {
			let out = "";
			let err = "";
			let child;
			try {
				child = spawn(CKPT[0], [...CKPT.slice(1), ...args], { cwd: ctx.cwd, stdio: ["pipe", "pipe", "pipe"] });
			} catch (e) {
				resolve({ code: -1, stdout: "", stderr: String(e) });
				return;
			}
			child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
			child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
			child.on("error", (e: Error) => resolve({ code: -1, stdout: out, stderr: err + e.message }));
			child.on("close", (code: number | null) => resolve({ code: code ?? -1, stdout: out, stderr: err }));
			child.stdin.on("error", () => {});
			child.stdin.end(input);
		});

	// ckpt runs one ckpt command on this pi session.
	const ckpt = (ctx: ExtensionContext, ...args: string[]) => run(ctx, ["--session", sid(ctx), ...args]);
	const json = async <T>(ctx: ExtensionContext, ...args: string[]): Promise<{ r: Run; v?: T }> => {
		const r = await ckpt(ctx, "--json", ...args);
		try {
			return { r, v: JSON.parse(r.stdout) as T };
		} catch {
			return { r };
		}
	};
	const firstLine = (s: string) => s.trim().split("\n")[0] ?? "";

	// yes asks a question whose default answer is No (pi's confirm
	// dialog starts on Yes).
	const yes = async (ctx: ExtensionContext, title: string, body: string) =>
		(await ctx.ui.select(`${title}\n${body}`, ["No", "Yes"])) === "Yes";

	// hook hands one event to `ckpt hook pi`; what it says on stderr is
	// the hook's health.
	const hook = async (ctx: ExtensionContext, ev: Record<string, unknown>): Promise<Run> => {
		const args = ["hook", "pi", ...(STRICT ? ["--strict"] : [])];
		const r = await run(ctx, args, JSON.stringify({ ...ev, session_id: sid(ctx), cwd: ctx.cwd }));
		health = r.code === -1 || r.stderr.includes("ckpt: hook:") ? firstLine(r.stderr) : "";
		return r;
	};

	const status = async (ctx: ExtensionContext) => {
		if (!ctx.hasUI) return;
		const { v } = await json<Turn[]>(ctx, "list");
		const n = v?.length ?? 0;
		const text = `◆ ckpt: ${n} checkpoint${n === 1 ? "" : "s"}` + (health ? ` · ⚠ ${health}` : "");
		ctx.ui.setStatus("ckpt", text);
	};

	// bindings maps each ckpt turn on the current branch to the pi entry
	// of its user message (the entries `ckpt-turn` this extension wrote).
	const bindings = (ctx: ExtensionContext): Map<number, string> => {
		const m = new Map<number, string>();
		for (const e of ctx.sessionManager.getBranch() as any[]) {
			if (e.type === "custom" && e.customType === "ckpt-turn" && e.data && typeof e.data.turn === "number") {
				m.set(e.data.turn, e.data.entry);
			}
		}
		return m;
	};
	const userText = (ctx: ExtensionContext, id: string | null | undefined): string | undefined => {
		const e: any = id ? ctx.sessionManager.getEntry(id) : undefined;
		if (!e || e.type !== "message" || e.message?.role !== "user") return undefined;
		const c = e.message.content;
		return typeof c === "string" ? c : (c ?? []).filter((p: any) => p.type === "text").map((p: any) => p.text).join("\n");
	};

	const label = (t: Turn) => {
		const tools = (t.steps ?? []).map((s) => (s.files.length > 0 ? `${s.tool} ${s.files.map((f) => f.path).join(", ")}` : s.tool));
		const what = tools.length > 0 ? tools.join(", ") : t.files.map((f) => f.path).join(", ") || "no files";
		const prompt = t.prompt.replace(/\s+/g, " ").slice(0, 60);
		return `#${t.turn} "${prompt}" → ${what}`;
	};
	const planText = (p: Plan) => {
		const lines = [...p.restored.map((f) => `~ ${f}`), ...p.deleted.map((f) => `- ${f}`)];
		return lines.length > 0 ? lines.join("\n") : "no file changes";
	};

	// history finds the op plain undo (next_undo) or redo (next_redo) acts on.
	const nextOp = async (ctx: ExtensionContext, which: "next_undo" | "next_redo") => {
		const { v } = await json<Op[]>(ctx, "history");
		return (v ?? []).find((o) => o[which]);
	};
	const newestOp = async (ctx: ExtensionContext) => (await json<Op[]>(ctx, "history")).v?.[0];

	// withForce runs a ckpt command that refuses over hand edits; it shows
	// them and asks once more before forcing.
	const withForce = async (ctx: ExtensionContext, args: string[]): Promise<{ r: Run; v?: Plan } | undefined> => {
		let res = await json<Plan>(ctx, ...args);
		if (res.r.code !== 0 && res.v && res.v.conflicts.length > 0) {
			const ok = await yes(ctx, "Files changed by hand since the agent left them", `${res.v.conflicts.join("\n")}\n\nOverwrite them? (undo brings them back)`);
			if (!ok) return undefined;
			res = await json<Plan>(ctx, ...args, "--force");
		}
		if (res.r.code !== 0) {
			ctx.ui.notify(`ckpt: ${firstLine(res.r.stderr) || "failed"}`, "error");
			return undefined;
		}
		return res;
	};

	// moveTo moves pi's conversation to entry (a user message: to just
	// before it, its text back in the editor; else onto it).
	const moveTo = async (ctx: any, entry: string, prompt?: string) => {
		navigating = true;
		try {
			const r = await ctx.navigateTree(entry);
			const text = r?.editorText ?? prompt;
			if (text) ctx.ui.setEditorText(text);
		} finally {
			navigating = false;
		}
	};

	const rewindTo = async (ctx: any, t: Turn, scope: "both" | "code" | "conversation", entry?: string) => {
		const before = ctx.sessionManager.getLeafId();
		const res = await withForce(ctx, ["rewind", String(t.turn), "--scope", scope]);
		if (!res) return false;
		if (scope !== "code" && entry) {
			await moveTo(ctx, entry, res.v?.prompt);
			const op = await newestOp(ctx);
			pi.appendEntry("ckpt-rewind", { session: sid(ctx), op: op?.id, leaf: before, target: entry });
		}
		const p = res.v!;
		ctx.ui.notify(`Rewound to before prompt #${t.turn} (${MODES[scope]}): ${p.restored.length} restored, ${p.deleted.length} deleted. /rewind → "${UNDO}" reverses it.`, "info");
		return true;
	};

	// undoRedo runs ckpt undo or redo and moves pi's conversation back or
	// forward with it when the op moved the conversation.
	const undoRedo = async (ctx: any, which: "undo" | "redo") => {
		const op = await nextOp(ctx, which === "undo" ? "next_undo" : "next_redo");
		if (!op) {
			ctx.ui.notify(`ckpt: nothing to ${which}`, "info");
			return;
		}
		const dry = await json<Plan>(ctx, which, "--dry-run");
		const what = `${op.kind} to before prompt #${op.turn} (${op.scope})`;
		if (!(await yes(ctx, which === "undo" ? "Undo the last rewind?" : "Redo the rewind?", `${what}\n${dry.v ? planText(dry.v) : ""}`))) return;
		const res = await withForce(ctx, [which]);
		if (!res) return;
		if (op.scope !== "code") {
			let mark: any;
			for (const e of ctx.sessionManager.getEntries() as any[]) {
				if (e.type === "custom" && e.customType === "ckpt-rewind" && e.data?.session === sid(ctx) && e.data.op === op.id) mark = e.data;
			}
			if (mark && which === "undo" && mark.leaf) await moveTo(ctx, mark.leaf);
			if (mark && which === "redo") {
				const before = ctx.sessionManager.getLeafId();
				await moveTo(ctx, mark.target, res.v?.prompt);
				const redone = await newestOp(ctx);
				pi.appendEntry("ckpt-rewind", { session: sid(ctx), op: redone?.id, leaf: before, target: mark.target });
			}
		}
		ctx.ui.notify(`ckpt: ${which} done: ${what}`, "info");
	};

	const rewindCommand = async (ctx: any) => {
		const { r, v: turns } = await json<Turn[]>(ctx, "list", "--steps");
		if (r.code !== 0 && r.stderr) {
			ctx.ui.notify(`ckpt: ${firstLine(r.stderr)}`, "error");
			return;
		}
		const undo = await nextOp(ctx, "next_undo");
		const redo = await nextOp(ctx, "next_redo");
		const list = [...(turns ?? [])].reverse();
		const options = [...(undo ? [UNDO] : []), ...(redo ? [REDO] : []), ...list.map(label)];
		if (options.length === 0) {
			ctx.ui.notify("ckpt: no checkpoints yet in this session", "info");
			return;
		}
		const choice = await ctx.ui.select("Rewind to before which prompt? (newest first)", options);
		if (!choice) return;
		if (choice === UNDO || choice === REDO) return undoRedo(ctx, choice === UNDO ? "undo" : "redo");
		const t = list[options.indexOf(choice) - (undo ? 1 : 0) - (redo ? 1 : 0)];
		const dry = await json<Plan>(ctx, "rewind", String(t.turn), "--scope", "code", "--dry-run");
		const preview = dry.v ? planText(dry.v) : firstLine(dry.r.stderr);
		const conflicts = dry.v?.conflicts ?? [];
		ctx.ui.notify(`Rewind to before prompt #${t.turn} would change:\n${preview}` + (conflicts.length ? `\nChanged by hand since the agent left them:\n${conflicts.join("\n")}` : ""), "info");
		const entry = bindings(ctx).get(t.turn);
		const modes = entry ? [MODES.both, MODES.code, MODES.conversation, DIFF] : [MODES.code, DIFF];
		let mode: string | undefined;
		for (;;) {
			mode = await ctx.ui.select(`Restore what? (prompt #${t.turn})`, modes);
			if (mode !== DIFF) break;
			const d = await ckpt(ctx, "diff", String(t.turn));
			await ctx.ui.editor(`What rewinding to before prompt #${t.turn} changes (read only)`, d.stdout || d.stderr || "no changes");
		}
		if (!mode) return;
		const scope = (Object.keys(MODES) as (keyof typeof MODES)[]).find((k) => MODES[k] === mode)!;
		if (!(await yes(ctx, `Rewind ${MODES[scope].toLowerCase()} to before prompt #${t.turn}?`, `"${t.prompt}"\n${scope === "conversation" ? "files stay as they are" : preview}`))) return;
		await rewindTo(ctx, t, scope, entry);
		await status(ctx);
	};

	pi.registerCommand("rewind", {
		description: "ckpt: rewind files and/or conversation to before an earlier prompt; undo and redo",
		handler: async (_args, ctx) => {
			await ctx.waitForIdle();
			await rewindCommand(ctx);
		},
	});

	pi.on("session_start", async (event, ctx) => {
		if (event.reason === "fork" && event.previousSessionFile) await adoptFork(ctx, event.previousSessionFile);
		await hook(ctx, { hook_event_name: "SessionStart", source: event.reason });
		await status(ctx);
	});

	pi.on("before_agent_start", async (event, ctx) => {
		// A run a custom message started has no prompt (pi before 1.x
		// sends no messageType: every run is a prompt's).
		if ((event as any).messageType === "custom" || typeof (event as any).prompt !== "string") return;
		await hook(ctx, { hook_event_name: "UserPromptSubmit", prompt: event.prompt });
		const { v } = await json<Turn[]>(ctx, "list", "--limit", "1");
		const t = v?.[v.length - 1];
		pending = t && t.prompt === (event as any).prompt ? { turn: t.turn, prompt: t.prompt } : undefined;
	});

	pi.on("tool_call", async (event, ctx) => {
		const r = await hook(ctx, { hook_event_name: "PreToolUse", tool_name: event.toolName, tool_input: event.input, tool_use_id: event.toolCallId });
		// Exit 2 only with --strict: the capture failed, so the tool must not run.
		if (r.code === 2) return { block: true, reason: firstLine(r.stderr) || "ckpt: capture failed" };
	});

	// The run's user message is bound to its ckpt turn when the run ends:
	// it is the last on the branch (pi persists it after its message_end).
	pi.on("agent_end", async (_event, ctx) => {
		if (pending === undefined) return;
		const branch = ctx.sessionManager.getBranch() as any[];
		// The newest user message with the run's prompt (messages sent while
		// pi worked join the run after it; a run that failed before pi kept
		// its message has none).
		let user: any;
		for (let i = branch.length - 1; i >= 0 && !user; i--) {
			if (userText(ctx, branch[i].id) === pending.prompt) user = branch[i];
			else if (branch[i].type === "custom" && branch[i].customType === "ckpt-turn") break;
		}
		if (user) pi.appendEntry("ckpt-turn", { session: sid(ctx), turn: pending.turn, entry: user.id });
		pending = undefined;
		await status(ctx);
	});

	// pi will not go on by itself: a background sync when the store has a
	// remote.
	pi.on("agent_settled" as any, async (_event: unknown, ctx: ExtensionContext) => {
		await hook(ctx, { hook_event_name: "Stop" });
		await status(ctx);
	});

	// The turn whose start is the file state at entry: a user message's
	// own turn; any later entry, the turn after the one it belongs to. The
	// entry may be on another branch of pi's tree: every binding counts,
	// and a turn only while ckpt's turn of that number has its prompt.
	const turnAt = async (ctx: ExtensionContext, entry: string): Promise<Turn | undefined> => {
		const byEntry = new Map<string, number>();
		for (const e of ctx.sessionManager.getEntries() as any[]) {
			if (e.type === "custom" && e.customType === "ckpt-turn" && typeof e.data?.turn === "number") byEntry.set(e.data.entry, e.data.turn);
		}
		const { v } = await json<Turn[]>(ctx, "list");
		const active = new Map((v ?? []).map((t) => [t.turn, t]));
		let id: string | null | undefined = entry;
		let after = 0;
		while (id) {
			const t = byEntry.get(id);
			if (t !== undefined) {
				// Only a turn that is still the one bound here (its prompt).
				if (active.get(t)?.prompt !== userText(ctx, id)) return undefined;
				return active.get(t + after);
			}
			if (userText(ctx, id) !== undefined) return undefined;
			after = 1;
			id = (ctx.sessionManager.getEntry(id) as any)?.parentId;
		}
		return undefined;
	};

	pi.on("session_before_tree", async (event, ctx) => {
		if (navigating || !ctx.hasUI) return;
		const t = await turnAt(ctx, event.preparation.targetId);
		const undo = await nextOp(ctx, "next_undo");
		const options = ["Keep current files", ...(t ? ["Restore files to that point"] : []), ...(undo && undo.scope === "code" ? ["Undo last file rewind"] : [])];
		if (options.length === 1) return;
		const choice = await ctx.ui.select("ckpt: files at that point?", options);
		if (!choice) return { cancel: true };
		if (choice === "Restore files to that point" && t && !(await withForce(ctx, ["rewind", String(t.turn), "--scope", "code"]))) return { cancel: true };
		if (choice === "Undo last file rewind" && !(await withForce(ctx, ["undo"]))) return { cancel: true };
		await status(ctx);
	});

	pi.on("session_before_fork", async (event, ctx) => {
		if (!ctx.hasUI) return;
		const t = await turnAt(ctx, event.entryId);
		const undo = await nextOp(ctx, "next_undo");
		const convOnly = "Conversation only (keep current files)";
		const all = "Restore all (files + conversation)";
		const code = "Code only (restore files, keep conversation)";
		const undoFiles = "Undo last file rewind";
		const options = [convOnly, ...(t ? [all, code] : []), ...(undo && undo.scope === "code" ? [undoFiles] : [])];
		const forkTurn = t && event.position === "before" ? t.turn : undefined;
		if (options.length > 1) {
			const choice = await ctx.ui.select("ckpt: fork and files", options);
			if (!choice) return { cancel: true };
			if (choice === code || choice === undoFiles) {
				await withForce(ctx, choice === code ? ["rewind", String(t!.turn), "--scope", "code"] : ["undo"]);
				await status(ctx);
				return { cancel: true };
			}
			if (choice === all && forkTurn === undefined && t && !(await withForce(ctx, ["rewind", String(t.turn), "--scope", "code"]))) return { cancel: true };
			if (forkTurn !== undefined) pi.appendEntry("ckpt-fork", { session: sid(ctx), turn: forkTurn, restore: choice === all });
			return;
		}
		if (forkTurn !== undefined) pi.appendEntry("ckpt-fork", { session: sid(ctx), turn: forkTurn, restore: false });
	});

	// adoptFork makes a session pi forked from one ckpt recorded a ckpt fork
	// of it: the turns before the fork point shared, the files put back
	// there when the user chose "Restore all" (undoable in the fork).
	const adoptFork = async (ctx: ExtensionContext, parentFile: string) => {
		let mark: any;
		try {
			for (const line of readFileSync(parentFile, "utf8").split("\n")) {
				if (!line.includes('"ckpt-fork"')) continue;
				const e = JSON.parse(line);
				if (e.type === "custom" && e.customType === "ckpt-fork") mark = e.data;
			}
		} catch {
			return;
		}
		if (!mark || typeof mark.turn !== "number") return;
		const args = ["--session", mark.session, "fork", String(mark.turn), "--to", sid(ctx), ...(mark.restore ? ["--restore"] : [])];
		let r = await run(ctx, args);
		if (r.code !== 0 && mark.restore && r.stderr.includes("changed since") && ctx.hasUI) {
			if (await yes(ctx, "Files changed by hand since the agent left them", `${r.stderr.trim()}\n\nOverwrite them? (undo brings them back)`)) {
				r = await run(ctx, [...args, "--force"]);
			}
		}
		if (r.code !== 0) ctx.ui.notify(`ckpt: fork: ${firstLine(r.stderr)}`, "warning");
	};

	// A quick files-only rewind of the last prompt (pi keeps Esc Esc for
	// its own /tree or /fork, where ckpt offers the same).
	pi.registerShortcut("ctrl+alt+z", {
		description: "ckpt: rewind files to before the last prompt",
		handler: async (ctx: any) => {
			const { v } = await json<Turn[]>(ctx, "list", "--limit", "1");
			const t = v?.[v.length - 1];
			if (!t) return ctx.ui.notify("ckpt: no checkpoints yet in this session", "info");
			const dry = await json<Plan>(ctx, "rewind", String(t.turn), "--scope", "code", "--dry-run");
			if (!(await yes(ctx, `Rewind files to before prompt #${t.turn}?`, `"${t.prompt}"\n${dry.v ? planText(dry.v) : ""}`))) return;
			await rewindTo(ctx, t, "code");
			await status(ctx);
		},
	});
}
