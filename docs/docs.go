// Package docs holds the CLI reference, docs/cli: one markdown page per
// ckpt command and help topic, embedded so that `ckpt help COMMAND` and
// the reference are the same text. A front-end that shows ckpt's help
// (a desktop app, an editor) reads it here too.
//
// A page is
//
//	# ckpt COMMAND
//
//	The one-line description.
//
//	```
//	ckpt COMMAND ARGS       (the usage line; a help topic has none)
//	```
//
//	The long description: markdown whose fenced blocks a terminal shows
//	indented by two spaces.
//
//	## Flags
//
//	- `--name`: what the flag does
package docs

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

//go:embed cli/*.md
var cli embed.FS

// Index is the reference's index page, which links every page.
const Index = "README.md"

// Page is one command's or help topic's page of the CLI reference.
type Page struct {
	Path  string            // the command path after "ckpt" ("sessions rm"; "" for ckpt itself)
	Short string            // the one-line description
	Usage string            // the usage line, "ckpt ..."; empty for a help topic
	Long  string            // the description as a terminal shows it
	Flags map[string]string // flag name (without --) to its description
}

// PageFile is the file name of the page of the command at path (see
// Page.Path): "sessions rm" is sessions-rm.md, ckpt itself ckpt.md.
func PageFile(path string) string {
	if path == "" {
		return "ckpt.md"
	}
	return strings.ReplaceAll(path, " ", "-") + ".md"
}

// Pages reads every page of the reference but its index, by Page.Path.
func Pages() (map[string]Page, error) {
	files, err := Files()
	if err != nil {
		return nil, err
	}
	pages := make(map[string]Page, len(files))
	for _, f := range files {
		if f == Index {
			continue
		}
		b, err := cli.ReadFile("cli/" + f)
		if err != nil {
			return nil, err
		}
		p, err := parse(string(b))
		if err == nil && PageFile(p.Path) != f {
			err = fmt.Errorf("its title names %q, whose page is %s", strings.TrimSpace("ckpt "+p.Path), PageFile(p.Path))
		}
		if err != nil {
			return nil, fmt.Errorf("docs/cli/%s: %w", f, err)
		}
		pages[p.Path] = p
	}
	return pages, nil
}

// Files lists the reference's pages by file name, the index included.
func Files() ([]string, error) {
	es, err := fs.ReadDir(cli, "cli")
	if err != nil {
		return nil, err
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}
	return names, nil
}

// ReadFile is the text of the reference's page named file.
func ReadFile(file string) (string, error) {
	b, err := cli.ReadFile("cli/" + file)
	return string(b), err
}

// parse reads a page (see the package comment).
func parse(s string) (Page, error) {
	var p Page
	title, rest, _ := strings.Cut(s, "\n")
	if !strings.HasPrefix(title, "# ckpt") {
		return p, fmt.Errorf("the first line is not \"# ckpt COMMAND\"")
	}
	p.Path = strings.TrimSpace(strings.TrimPrefix(title, "# ckpt"))
	rest = strings.TrimLeft(rest, "\n")
	p.Short, rest, _ = strings.Cut(rest, "\n")
	if p.Short == "" {
		return p, fmt.Errorf("no one-line description under the title")
	}
	rest = strings.TrimLeft(rest, "\n")
	if u, ok := strings.CutPrefix(rest, "```\nckpt"); ok {
		line, after, _ := strings.Cut(u, "\n")
		p.Usage = "ckpt" + line
		rest, ok = strings.CutPrefix(after, "```\n")
		if !ok {
			return p, fmt.Errorf("the usage block is not one line")
		}
	}
	body, flags, _ := strings.Cut("\n"+rest, "\n## Flags\n")
	p.Long = terminal(strings.Trim(body, "\n"))
	p.Flags = map[string]string{}
	for _, l := range strings.Split(flags, "\n") {
		if l == "" {
			continue
		}
		name, text, ok := strings.Cut(strings.TrimPrefix(l, "- `--"), "`: ")
		if !ok || !strings.HasPrefix(l, "- `--") {
			return p, fmt.Errorf("flag line %q is not \"- `--NAME`: TEXT\"", l)
		}
		p.Flags[name] = text
	}
	return p, nil
}

// terminal is markdown as a terminal shows it: a fenced block's lines
// indented by two spaces, its fences dropped.
func terminal(md string) string {
	lines := strings.Split(md, "\n")
	out := lines[:0]
	fenced := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "```"):
			fenced = !fenced
			continue
		case fenced:
			l = "  " + l
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
