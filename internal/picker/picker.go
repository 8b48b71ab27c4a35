// Package picker is the interactive picker of `ckpt rewind` without TURN
// on a terminal. It lists the turns newest first with their change stats
// and a preview of what a code rewind to the selected turn would change,
// then asks for the scope and for a confirmation whose default keeps
// everything. Files changed since the agent left them (conflicts) are
// listed before that confirmation; overwriting them takes a second one,
// which says that undo brings them back. It changes nothing: Run returns
// the choice, and the caller rewinds after the TUI has closed. Every prompt
// wraps to the terminal's width; list rows and paths are cut to it. Each
// turn's steps (its tool calls) are rows under it, newest first: choosing
// one rewinds the code to just before that tool call (a step has no scope
// menu: it rewinds code only).
//
// It is the CLI's: its prompts name ckpt's commands. Other front-ends
// preview and rewind through package controller (Controller.DiffTo,
// RewindTo with DryRun) as it does.
package picker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/internal/quote"
)

// Choice is the rewind the user confirmed: to Point, of Scope (code only
// for a step), with Force when they chose to overwrite the files changed
// since the agent left them.
type Choice struct {
	Point controller.Target
	Scope controller.Scope
	Force bool
}

// Run shows the picker on the terminal in and out for c's active turns
// until the user confirms a rewind or cancels; ok is false when they
// cancelled. A session with no turn is an error saying how to open one.
// Only dry runs and previews touch c: the rewind is the caller's.
func Run(ctx context.Context, c *controller.Controller, in, out *os.File) (choice Choice, ok bool, err error) {
	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{Lines: true, Steps: true})
	if err != nil {
		return Choice{}, false, err
	}
	if len(cps) == 0 {
		return Choice{}, false, errors.New("no turns to rewind to: open one with `ckpt turn PROMPT`")
	}
	m := newModel(ctx, c, cps)
	// The first frame is drawn before the size arrives as a message: draw
	// it at the terminal's size, so a narrow one never sees a wider frame
	// wrap.
	if w, h, err := term.GetSize(int(out.Fd())); err == nil && w > 0 && h > 0 {
		m.width, m.height = w, h
	}
	p := tea.NewProgram(m, tea.WithInput(in), tea.WithOutput(out), tea.WithAltScreen(), tea.WithContext(ctx))
	final, err := p.Run()
	if err != nil {
		return Choice{}, false, fmt.Errorf("picker: %w", err)
	}
	fm := final.(*model)
	if !fm.confirmed {
		return Choice{}, false, nil
	}
	return Choice{Point: fm.rows[fm.sel].point(), Scope: fm.scope(), Force: fm.force}, true, nil
}

// The picker's screens, in order.
type pickerScreen int

const (
	screenTurns pickerScreen = iota
	screenScope
	screenConfirm
	screenForce // the second confirmation, to overwrite conflicts
)

// scopeChoices is the scope menu; the last entry cancels.
var scopeChoices = []struct {
	label string
	scope controller.Scope
}{
	{"code + conversation", controller.ScopeBoth},
	{"conversation only", controller.ScopeConversation},
	{"code only", controller.ScopeCode},
	{"cancel", ""},
}

// confirmChoices: index 0, the non-destructive one, is the default. With
// conflicts, the second choice leads to the force screen instead.
var (
	confirmChoices  = []string{"No, keep everything", "Yes, rewind"}
	conflictChoices = []string{"No, keep everything", "Overwrite the changed files…"}
	forceChoices    = []string{"No, keep everything", "Yes, overwrite and rewind"}
)

// fileStat is one file's change within a turn.
type fileStat struct {
	path string
	kind controller.ChangeKind
	stat string // "+N −M", "binary", or why it is unknown
}

// turnRow is one turn of the list, with its stats, or one step of a turn
// (step > 0), with the files its tool call touched first.
type turnRow struct {
	turn    int
	step    int
	when    string
	prompt  string // for a step: its tool
	pruned  bool
	files   []fileStat
	summary string
}

// point is where choosing the row rewinds to.
func (r turnRow) point() controller.Target { return controller.Target{Turn: r.turn, Step: r.step} }

// target names the row's rewind point for the prompts.
func (r turnRow) target() string {
	if r.step == 0 {
		return fmt.Sprintf("the start of turn %d", r.turn)
	}
	return fmt.Sprintf("turn %d before tool call %d (%s)", r.turn, r.step, r.point())
}

type model struct {
	ctx  context.Context // only for the controller calls made from Update
	c    *controller.Controller
	rows []turnRow // newest first

	screen     pickerScreen
	sel        int // selected row
	scroll     int // preview scroll offset, in lines
	scopeSel   int
	confirmSel int
	forceSel   int

	// The plan of the chosen rewind, from a dry run made on entering the
	// confirm screen: files changed since the agent left them, or why
	// there is no plan.
	conflicts []string
	planErr   string

	previews map[controller.Target][]string // per row: the preview's lines

	width, height int
	confirmed     bool
	force         bool // overwrite the conflicts (the force screen said yes)
}

func newModel(ctx context.Context, c *controller.Controller, cps []controller.Checkpoint) *model {
	m := &model{ctx: ctx, c: c, previews: map[controller.Target][]string{}, width: 80, height: 24}
	for i := len(cps) - 1; i >= 0; i-- {
		m.rows = append(m.rows, turnStats(cps[i]))
		ss := cps[i].Steps
		for j := len(ss) - 1; j >= 0; j-- {
			m.rows = append(m.rows, stepRow(ss[j], cps[i].Pruned))
		}
	}
	return m
}

// stepRow is a step's row: its tool and the files it touched first (+ did
// not exist before the call, ~ existed).
func stepRow(st controller.Step, pruned bool) turnRow {
	r := turnRow{turn: st.Turn, step: st.Number, when: st.Time.Local().Format("2006-01-02 15:04:05"), prompt: st.Tool, pruned: pruned}
	if r.prompt == "" {
		r.prompt = "(tool call)"
	}
	var names []string
	for _, f := range st.Files {
		kind, mark := controller.Modified, "~"
		if f.Content == nil {
			kind, mark = controller.Created, "+"
		}
		r.files = append(r.files, fileStat{path: f.Path, kind: kind, stat: "first touch"})
		names = append(names, mark+quote.Path(f.Path))
	}
	r.summary = msg.Plural(len(st.Files), "file")
	if len(names) > 0 {
		r.prompt += " " + strings.Join(names, " ")
	}
	return r
}

// turnStats is a turn's row: each file's added and removed lines over the
// turn (see controller.ListOptions.Lines), and their sums.
func turnStats(cp controller.Checkpoint) turnRow {
	r := turnRow{turn: cp.Turn, when: cp.Time.Local().Format("2006-01-02 15:04:05"), prompt: firstLine(cp.Prompt), pruned: cp.Pruned}
	var added, removed int
	known := true
	for _, fc := range cp.Changes {
		fst := fileStat{path: fc.Path, kind: fc.Kind}
		switch {
		case !fc.Known:
			fst.stat = "?"
			known = false
		case fc.Binary:
			fst.stat = "binary"
		default:
			added += fc.Added
			removed += fc.Removed
			fst.stat = fmt.Sprintf("+%d −%d", fc.Added, fc.Removed)
		}
		r.files = append(r.files, fst)
	}
	switch {
	case cp.Pruned:
		r.summary = "pruned"
	case len(cp.Files) == 0:
		r.summary = "no files"
	default:
		s := "s"
		if len(cp.Files) == 1 {
			s = ""
		}
		r.summary = fmt.Sprintf("+%d −%d in %d file%s", added, removed, len(cp.Files), s)
		if !known {
			r.summary += " (some unknown)"
		}
	}
	return r
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func (m *model) scope() controller.Scope {
	if m.rows[m.sel].step > 0 {
		return controller.ScopeCode // a step rewinds code only
	}
	return scopeChoices[m.scopeSel].scope
}

func (m *model) Init() tea.Cmd { return nil }

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case tea.KeyMsg:
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
			// Keys typed faster than they are read arrive together.
			for _, r := range msg.Runes {
				if _, cmd := m.key(string(r)); cmd != nil {
					return m, cmd
				}
			}
			return m, nil
		}
		return m.key(msg.String())
	}
	return m, nil
}

// key handles one key press.
func (m *model) key(key string) (tea.Model, tea.Cmd) {
	switch key {
	case "ctrl+c", "esc", "q":
		m.confirmed = false
		return m, tea.Quit
	}
	switch m.screen {
	case screenTurns:
		return m.updateTurns(key)
	case screenScope:
		switch key {
		case "up", "k":
			m.scopeSel = max(m.scopeSel-1, 0)
		case "down", "j":
			m.scopeSel = min(m.scopeSel+1, len(scopeChoices)-1)
		case "enter":
			if m.scope() == "" {
				return m, tea.Quit
			}
			m.plan()
			m.screen, m.confirmSel = screenConfirm, 0
		}
	case screenConfirm:
		switch key {
		case "up", "k", "left", "h", "shift+tab":
			m.confirmSel = max(m.confirmSel-1, 0)
		case "down", "j", "right", "l", "tab":
			m.confirmSel = min(m.confirmSel+1, len(confirmChoices)-1)
		case "enter":
			if m.confirmSel == 1 && len(m.conflicts) > 0 {
				m.screen, m.forceSel = screenForce, 0
				return m, nil
			}
			m.confirmed = m.confirmSel == 1
			return m, tea.Quit
		}
	case screenForce:
		switch key {
		case "up", "k", "left", "h", "shift+tab":
			m.forceSel = max(m.forceSel-1, 0)
		case "down", "j", "right", "l", "tab":
			m.forceSel = min(m.forceSel+1, len(forceChoices)-1)
		case "enter":
			m.confirmed = m.forceSel == 1
			m.force = m.confirmed
			return m, tea.Quit
		}
	}
	return m, nil
}

// plan asks for the chosen rewind's conflicts with a dry run, which changes
// nothing. A conversation-only rewind touches no file and has none.
func (m *model) plan() {
	m.conflicts, m.planErr = nil, ""
	if !m.scope().Code() {
		return
	}
	res, err := m.c.Rewind(m.ctx, m.rows[m.sel].point(), m.scope(), controller.RewindOptions{DryRun: true})
	if err != nil {
		m.planErr = msg.OneLine(err)
		return
	}
	m.conflicts = res.Conflicts
}

func (m *model) updateTurns(key string) (tea.Model, tea.Cmd) {
	prev := m.sel
	switch key {
	case "up", "k":
		m.sel = max(m.sel-1, 0)
	case "down", "j":
		m.sel = min(m.sel+1, len(m.rows)-1)
	case "home", "g":
		m.sel = 0
	case "end", "G":
		m.sel = len(m.rows) - 1
	case "pgdown", " ", "ctrl+d":
		m.scroll = min(m.scroll+m.previewHeight()/2, max(len(m.preview())-m.previewHeight(), 0))
	case "pgup", "ctrl+u":
		m.scroll = max(m.scroll-m.previewHeight()/2, 0)
	case "enter":
		if m.rows[m.sel].pruned {
			return m, nil // nothing to rewind to; the preview says why
		}
		if m.rows[m.sel].step > 0 {
			m.plan() // code only: no scope to ask for
			m.screen, m.confirmSel = screenConfirm, 0
			return m, nil
		}
		m.screen, m.scopeSel = screenScope, 0
	}
	if m.sel != prev {
		m.scroll = 0
	}
	return m, nil
}

// preview returns the selected turn's preview lines, computing them once:
// its per-file stats, then what a code rewind to it would change.
func (m *model) preview() []string {
	r := m.rows[m.sel]
	if p, ok := m.previews[r.point()]; ok {
		return p
	}
	var lines []string
	if r.step > 0 {
		lines = append(lines, fmt.Sprintf("tool call %s touched first:", r.point()))
	} else {
		lines = append(lines, fmt.Sprintf("turn %d changed:", r.turn))
	}
	if len(r.files) == 0 {
		lines = append(lines, "  (no files)")
	}
	for _, f := range r.files {
		lines = append(lines, fmt.Sprintf("  %-14s %-9s %s", f.stat, f.kind, quote.Path(f.path)))
	}
	lines = append(lines, "", fmt.Sprintf("a code rewind to %s would:", r.target()))
	diffs, skipped, err := m.c.Diff(m.ctx, r.point())
	switch {
	case err != nil:
		lines = append(lines, "  cannot preview: "+msg.OneLine(err))
	case len(diffs) == 0 && len(skipped) == 0:
		lines = append(lines, "  change no files (they already match)")
	}
	for _, d := range diffs {
		lines = append(lines, fmt.Sprintf("%s %s", d.Action, quote.Path(d.Path)))
		if d.Note != "" {
			lines = append(lines, "  "+d.Note)
		}
		if d.Unified != "" {
			lines = append(lines, strings.Split(strings.TrimRight(d.Unified, "\n"), "\n")...)
		}
	}
	for _, s := range skipped {
		lines = append(lines, fmt.Sprintf("skip %s: %s", quote.Path(s.Path), s.Reason))
	}
	m.previews[r.point()] = lines
	return lines
}

var (
	titleStyle = lipgloss.NewStyle().Bold(true)
	selStyle   = lipgloss.NewStyle().Reverse(true)
	dimStyle   = lipgloss.NewStyle().Faint(true)
	addStyle   = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	delStyle   = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	hunkStyle  = lipgloss.NewStyle().Foreground(lipgloss.Color("6"))
)

// listHeight is how many turn rows the list shows at once.
func (m *model) listHeight() int {
	return max(min(len(m.rows), m.height/3), 1)
}

// The turns screen's title and keys line.
const (
	turnsTitle = "Rewind to the start of which turn?"
	turnsHelp  = "↑/↓ j/k move · PgUp/PgDn scroll preview · Enter choose · q/Esc cancel"
)

// previewHeight is how many preview lines fit under the list: the screen
// less the title and keys lines as wrapped, the list, its rule, the "more
// lines" line and one spare.
func (m *model) previewHeight() int {
	header := strings.Count(m.wrap(turnsTitle), "\n") + strings.Count(m.wrap(turnsHelp), "\n") + 2
	return max(m.height-m.listHeight()-header-3, 3)
}

func (m *model) View() string {
	var b strings.Builder
	switch m.screen {
	case screenTurns:
		m.viewTurns(&b)
	case screenScope:
		m.viewScope(&b)
	case screenConfirm:
		m.viewConfirm(&b)
	case screenForce:
		m.viewForce(&b)
	}
	return b.String()
}

// wrap fits prose to the terminal's width, breaking at spaces where it can.
func (m *model) wrap(s string) string {
	if m.width <= 0 {
		return s
	}
	return ansi.Wrap(s, m.width, "")
}

// para is prose indented by two spaces, every line of it, wrapped.
func (m *model) para(s string) string {
	if m.width > 2 {
		s = ansi.Wrap(s, m.width-2, "")
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// help is the keys line under a screen, wrapped.
func (m *model) help(b *strings.Builder, s string) {
	b.WriteString(m.wrap(dimStyle.Render(s)) + "\n")
}

// choices writes a menu, the selected entry marked and reversed.
func (m *model) choices(b *strings.Builder, items []string, sel int) {
	for i, c := range items {
		line := truncate(marker(i == sel)+" "+c, m.width)
		if i == sel {
			line = selStyle.Render(line)
		}
		b.WriteString(line + "\n")
	}
}

// them is the pronoun for n files.
func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// listPaths writes up to ten paths, indented and cut to the width.
func (m *model) listPaths(b *strings.Builder, paths []string) {
	for i, p := range paths {
		if i == 10 {
			b.WriteString(m.wrap(fmt.Sprintf("    … and %d more", len(paths)-10)) + "\n")
			break
		}
		b.WriteString(truncate("    "+quote.Path(p), m.width) + "\n")
	}
}

func (m *model) viewTurns(b *strings.Builder) {
	b.WriteString(m.wrap(titleStyle.Render(turnsTitle)) + "\n")
	m.help(b, turnsHelp)
	h := m.listHeight()
	top := min(max(m.sel-h+1, 0), max(len(m.rows)-h, 0))
	if m.sel < top {
		top = m.sel
	}
	sw := 0 // the summary column: as wide as the widest
	for _, r := range m.rows {
		sw = max(sw, utf8.RuneCountInString(r.summary))
	}
	for i := top; i < min(top+h, len(m.rows)); i++ {
		r := m.rows[i]
		when := r.when
		if m.width < 100 {
			when = r.when[len("2006-01-02 "):len("2006-01-02 15:04")] // the prompt needs the room
		}
		line := fmt.Sprintf("%s turn %-3d %s  %-*s  %s", marker(i == m.sel), r.turn, when, sw, r.summary, r.prompt)
		if r.step > 0 {
			line = fmt.Sprintf("%s   %-7s %s  %-*s  %s", marker(i == m.sel), r.point(), when, sw, r.summary, r.prompt)
		}
		line = truncate(line, m.width)
		if i == m.sel {
			line = selStyle.Render(line)
		}
		b.WriteString(line + "\n")
	}
	b.WriteString(dimStyle.Render(strings.Repeat("─", max(m.width, 1))) + "\n")
	lines := m.preview()
	ph := m.previewHeight()
	end := min(m.scroll+ph, len(lines))
	for _, l := range lines[m.scroll:end] {
		b.WriteString(styleDiffLine(truncate(l, m.width)) + "\n")
	}
	if rest := len(lines) - end; rest > 0 {
		b.WriteString(dimStyle.Render(fmt.Sprintf("… %d more lines (PgDn)", rest)) + "\n")
	}
}

func (m *model) viewScope(b *strings.Builder) {
	r := m.rows[m.sel]
	fmt.Fprintf(b, "%s\n\n", m.wrap(titleStyle.Render(fmt.Sprintf("Rewind what to the start of turn %d (%s)?", r.turn, truncate(r.prompt, 60)))))
	labels := make([]string, len(scopeChoices))
	for i, c := range scopeChoices {
		labels[i] = c.label
	}
	m.choices(b, labels, m.scopeSel)
	b.WriteString("\n")
	m.help(b, "↑/↓ move · Enter choose · q/Esc cancel")
}

func (m *model) viewConfirm(b *strings.Builder) {
	r := m.rows[m.sel]
	what := map[controller.Scope]string{
		controller.ScopeBoth:         "code and conversation",
		controller.ScopeConversation: "the conversation",
		controller.ScopeCode:         "code",
	}[m.scope()]
	fmt.Fprintf(b, "%s\n\n", m.wrap(titleStyle.Render(fmt.Sprintf("Rewind %s to %s (%s)?", what, r.target(), truncate(r.prompt, 60)))))
	if m.scope().Code() {
		n := 0
		for _, l := range m.preview() {
			if strings.HasPrefix(l, "restore ") || strings.HasPrefix(l, "delete ") {
				if n < 10 {
					b.WriteString(truncate("  "+l, m.width) + "\n")
				}
				n++
			}
		}
		if n > 10 {
			fmt.Fprintf(b, "  … and %d more files\n", n-10)
		}
		if n == 0 {
			b.WriteString("  no files change\n")
		}
	}
	if m.scope().Conversation() {
		b.WriteString(m.para(fmt.Sprintf("turns %d.. leave the conversation; turn %d's prompt is handed back", r.turn, r.turn)) + "\n")
	}
	if m.planErr != "" {
		b.WriteString("\n" + m.para(delStyle.Render("cannot check for changed files: "+m.planErr)) + "\n")
	}
	choices := confirmChoices
	if len(m.conflicts) > 0 {
		choices = conflictChoices
		b.WriteString("\n" + m.para(delStyle.Render(fmt.Sprintf("%s changed since the agent left %s; the rewind would overwrite %[2]s:", msg.Plural(len(m.conflicts), "file"), them(len(m.conflicts))))) + "\n")
		m.listPaths(b, m.conflicts)
		b.WriteString(m.para("A rewind without forcing refuses and changes nothing.") + "\n")
	}
	b.WriteString("\n" + m.para("`ckpt undo` reverses it.") + "\n\n")
	m.choices(b, choices, m.confirmSel)
	b.WriteString("\n")
	m.help(b, "↑/↓ move · Enter choose · q/Esc cancel")
}

// viewForce is the second confirmation, for overwriting the conflicts.
func (m *model) viewForce(b *strings.Builder) {
	r := m.rows[m.sel]
	fmt.Fprintf(b, "%s\n\n", m.wrap(titleStyle.Render(fmt.Sprintf("Overwrite %s changed since the agent left %s, rewinding to %s?", msg.Plural(len(m.conflicts), "file"), them(len(m.conflicts)), strings.TrimPrefix(r.target(), "the start of ")))))
	m.listPaths(b, m.conflicts)
	b.WriteString("\n" + m.para(fmt.Sprintf("The current content is stored first: `ckpt undo` brings %s back.", them(len(m.conflicts)))) + "\n\n")
	m.choices(b, forceChoices, m.forceSel)
	b.WriteString("\n")
	m.help(b, "↑/↓ move · Enter choose · q/Esc cancel")
}

func marker(selected bool) string {
	if selected {
		return ">"
	}
	return " "
}

func styleDiffLine(l string) string {
	switch {
	case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
		return titleStyle.Render(l)
	case strings.HasPrefix(l, "+"):
		return addStyle.Render(l)
	case strings.HasPrefix(l, "-"):
		return delStyle.Render(l)
	case strings.HasPrefix(l, "@@"):
		return hunkStyle.Render(l)
	}
	return l
}

// truncate makes s safe to show (tabs expanded, other control characters
// replaced) and cuts it to width terminal cells.
func truncate(s string, width int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\t' {
			return '?'
		}
		return r
	}, strings.ReplaceAll(s, "\t", "    "))
	if width <= 0 {
		return s
	}
	return ansi.Truncate(s, width, "…")
}
