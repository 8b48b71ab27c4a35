package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/controller"
)

// The interactive picker: `ckpt rewind` without TURN on a terminal. It
// lists the turns newest first with their change stats and a preview of
// what a code rewind to the selected turn would change, then asks for the
// scope and for a confirmation whose default keeps everything. It changes
// nothing until the user moves to "Yes, rewind" and presses Enter; the
// rewind itself runs after the TUI has closed, and its result is printed
// exactly as `ckpt rewind TURN` prints it.

func runPicker(cmd *cobra.Command, a *app) error {
	ctx := cmd.Context()
	in, okIn := a.stdin.(*os.File)
	out, okOut := a.stdout.(*os.File)
	if !okIn || !okOut {
		return usagef("rewind takes one TURN; run it on a terminal without TURN to pick one interactively")
	}
	c, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	cps, err := c.Checkpoints(ctx)
	if err != nil {
		return err
	}
	if len(cps) == 0 {
		return errors.New("no turns to rewind to: open one with `ckpt turn PROMPT`")
	}
	m := newPickerModel(ctx, c, cps)
	p := tea.NewProgram(m, tea.WithInput(in), tea.WithOutput(out), tea.WithAltScreen(), tea.WithContext(ctx))
	final, err := p.Run()
	if err != nil {
		return fmt.Errorf("picker: %w", err)
	}
	fm := final.(*pickerModel)
	if !fm.confirmed {
		a.say("cancelled, nothing changed")
		return nil
	}
	res, err := c.Rewind(ctx, fm.rows[fm.sel].turn, fm.scope(), controller.RewindOptions{})
	if err != nil {
		return err
	}
	return a.printResult(res, "rewind")
}

// The picker's screens, in order.
type pickerScreen int

const (
	screenTurns pickerScreen = iota
	screenScope
	screenConfirm
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

// confirmChoices: index 0, the non-destructive one, is the default.
var confirmChoices = []string{"No, keep everything", "Yes, rewind"}

// fileStat is one file's change within a turn.
type fileStat struct {
	path string
	kind controller.ChangeKind
	stat string // "+N −M", "binary", or why it is unknown
}

// turnRow is one turn of the list, with its stats.
type turnRow struct {
	turn    int
	when    string
	prompt  string
	pruned  bool
	files   []fileStat
	summary string
}

type pickerModel struct {
	ctx  context.Context // only for the controller calls made from Update
	c    *controller.Controller
	rows []turnRow // newest first

	screen     pickerScreen
	sel        int // selected row
	scroll     int // preview scroll offset, in lines
	scopeSel   int
	confirmSel int

	previews map[int][]string // per turn: the preview's lines

	width, height int
	confirmed     bool
}

func newPickerModel(ctx context.Context, c *controller.Controller, cps []controller.Checkpoint) *pickerModel {
	m := &pickerModel{ctx: ctx, c: c, previews: map[int][]string{}, width: 80, height: 24}
	for i := len(cps) - 1; i >= 0; i-- {
		m.rows = append(m.rows, turnStats(ctx, c, cps[i]))
	}
	return m
}

// turnStats counts each file's added and removed lines over the turn: its
// content at the turn's start against its content at the turn's end (for
// the open turn, the file on disk now).
func turnStats(ctx context.Context, c *controller.Controller, cp controller.Checkpoint) turnRow {
	r := turnRow{turn: cp.Turn, when: cp.Time.Local().Format("2006-01-02 15:04:05"), prompt: firstLine(cp.Prompt), pruned: cp.Pruned}
	var added, removed int
	changes, err := c.TurnChanges(ctx, cp)
	known := err == nil
	for _, fc := range changes {
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

func (m *pickerModel) scope() controller.Scope { return scopeChoices[m.scopeSel].scope }

func (m *pickerModel) Init() tea.Cmd { return nil }

func (m *pickerModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
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
func (m *pickerModel) key(key string) (tea.Model, tea.Cmd) {
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
			m.screen, m.confirmSel = screenConfirm, 0
		}
	case screenConfirm:
		switch key {
		case "up", "k", "left", "h", "shift+tab":
			m.confirmSel = max(m.confirmSel-1, 0)
		case "down", "j", "right", "l", "tab":
			m.confirmSel = min(m.confirmSel+1, len(confirmChoices)-1)
		case "enter":
			m.confirmed = m.confirmSel == 1
			return m, tea.Quit
		}
	}
	return m, nil
}

func (m *pickerModel) updateTurns(key string) (tea.Model, tea.Cmd) {
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
		m.screen, m.scopeSel = screenScope, 0
	}
	if m.sel != prev {
		m.scroll = 0
	}
	return m, nil
}

// preview returns the selected turn's preview lines, computing them once:
// its per-file stats, then what a code rewind to it would change.
func (m *pickerModel) preview() []string {
	r := m.rows[m.sel]
	if p, ok := m.previews[r.turn]; ok {
		return p
	}
	var lines []string
	lines = append(lines, fmt.Sprintf("turn %d changed:", r.turn))
	if len(r.files) == 0 {
		lines = append(lines, "  (no files)")
	}
	for _, f := range r.files {
		lines = append(lines, fmt.Sprintf("  %-14s %-9s %s", f.stat, f.kind, f.path))
	}
	lines = append(lines, "", fmt.Sprintf("a code rewind to turn %d would:", r.turn))
	diffs, skipped, err := m.c.Diff(m.ctx, r.turn)
	switch {
	case err != nil:
		lines = append(lines, "  cannot preview: "+oneLine(err))
	case len(diffs) == 0 && len(skipped) == 0:
		lines = append(lines, "  change no files (they already match)")
	}
	for _, d := range diffs {
		lines = append(lines, fmt.Sprintf("%s %s", d.Action, d.Path))
		if d.Note != "" {
			lines = append(lines, "  "+d.Note)
		}
		if d.Unified != "" {
			lines = append(lines, strings.Split(strings.TrimRight(d.Unified, "\n"), "\n")...)
		}
	}
	for _, s := range skipped {
		lines = append(lines, fmt.Sprintf("skip %s: %s", s.Path, s.Reason))
	}
	m.previews[r.turn] = lines
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
func (m *pickerModel) listHeight() int {
	return max(min(len(m.rows), m.height/3), 1)
}

// previewHeight is how many preview lines fit under the list.
func (m *pickerModel) previewHeight() int {
	return max(m.height-m.listHeight()-5, 3)
}

func (m *pickerModel) View() string {
	var b strings.Builder
	switch m.screen {
	case screenTurns:
		m.viewTurns(&b)
	case screenScope:
		m.viewScope(&b)
	case screenConfirm:
		m.viewConfirm(&b)
	}
	return b.String()
}

func (m *pickerModel) viewTurns(b *strings.Builder) {
	b.WriteString(titleStyle.Render("Rewind to the start of which turn?") + dimStyle.Render("  ↑/↓ j/k move · PgUp/PgDn scroll preview · Enter choose · q/Esc cancel") + "\n")
	h := m.listHeight()
	top := min(max(m.sel-h+1, 0), max(len(m.rows)-h, 0))
	if m.sel < top {
		top = m.sel
	}
	for i := top; i < min(top+h, len(m.rows)); i++ {
		r := m.rows[i]
		line := fmt.Sprintf("%s turn %-3d %s  %-28s  %s", marker(i == m.sel), r.turn, r.when, r.summary, r.prompt)
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

func (m *pickerModel) viewScope(b *strings.Builder) {
	r := m.rows[m.sel]
	fmt.Fprintf(b, "%s\n\n", titleStyle.Render(fmt.Sprintf("Rewind what to the start of turn %d (%s)?", r.turn, truncate(r.prompt, 60))))
	for i, c := range scopeChoices {
		line := marker(i == m.scopeSel) + " " + c.label
		if i == m.scopeSel {
			line = selStyle.Render(line)
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("\n" + dimStyle.Render("↑/↓ move · Enter choose · q/Esc cancel") + "\n")
}

func (m *pickerModel) viewConfirm(b *strings.Builder) {
	r := m.rows[m.sel]
	what := map[controller.Scope]string{
		controller.ScopeBoth:         "code and conversation",
		controller.ScopeConversation: "the conversation",
		controller.ScopeCode:         "code",
	}[m.scope()]
	fmt.Fprintf(b, "%s\n\n", titleStyle.Render(fmt.Sprintf("Rewind %s to the start of turn %d (%s)?", what, r.turn, truncate(r.prompt, 60))))
	if m.scope().Code() {
		n := 0
		for _, l := range m.preview() {
			if strings.HasPrefix(l, "restore ") || strings.HasPrefix(l, "delete ") {
				if n < 10 {
					b.WriteString("  " + l + "\n")
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
		fmt.Fprintf(b, "  turns %d.. leave the conversation; turn %d's prompt is handed back\n", r.turn, r.turn)
	}
	b.WriteString("\n  `ckpt undo` reverses it.\n\n")
	for i, c := range confirmChoices {
		line := marker(i == m.confirmSel) + " " + c
		if i == m.confirmSel {
			line = selStyle.Render(line)
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("\n" + dimStyle.Render("↑/↓ move · Enter choose · q/Esc cancel") + "\n")
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
