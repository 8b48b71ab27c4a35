package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/docs"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelpPages: the CLI reference, docs/cli, is the help's one source.
// Every command of the tree has its page, whose usage line is the
// command's own and whose flags are the command's flags; every page is a
// command's or a help topic's; the index links every page, and each of
// its links names a page.
func TestHelpPages(t *testing.T) {
	t.Parallel()
	pages, err := docs.Pages()
	if err != nil {
		t.Fatal(err)
	}
	root := newRoot(&app{})
	applyDocs(root)
	seen := map[string]bool{}
	eachCommand(root, func(c *cobra.Command) {
		path := commandPath(c)
		seen[path] = true
		p, ok := pages[path]
		switch {
		case !ok:
			t.Errorf("%q has no page: write docs/cli/%s", c.CommandPath(), docs.PageFile(path))
		case c.Runnable() || c.HasSubCommands():
			use := c.Use
			if c.HasParent() {
				use = c.Parent().CommandPath() + " " + use
			}
			if p.Usage != use {
				t.Errorf("docs/cli/%s gives the usage %q, the command %q", docs.PageFile(path), p.Usage, use)
			}
			var flags []string
			fs := c.LocalNonPersistentFlags()
			if !c.HasParent() {
				fs = c.PersistentFlags()
			}
			fs.VisitAll(func(f *pflag.Flag) {
				if f.Name != "help" && f.Name != "version" {
					flags = append(flags, f.Name)
				}
			})
			var documented []string
			for name := range p.Flags {
				documented = append(documented, name)
			}
			slices.Sort(documented)
			if !slices.Equal(flags, documented) {
				t.Errorf("docs/cli/%s documents the flags %v; %q has %v", docs.PageFile(path), documented, c.CommandPath(), flags)
			}
		case p.Usage != "":
			t.Errorf("docs/cli/%s gives a usage line, but %q is a help topic", docs.PageFile(path), c.CommandPath())
		}
		if ok && (c.Short != p.Short || c.Long != p.Long) {
			t.Errorf("`ckpt help %s` does not show docs/cli/%s", path, docs.PageFile(path))
		}
	})
	for path := range pages {
		if !seen[path] {
			t.Errorf("docs/cli/%s is the page of %q, which is no command", docs.PageFile(path), strings.TrimSpace("ckpt "+path))
		}
	}

	index, err := docs.ReadFile(docs.Index)
	if err != nil {
		t.Fatal(err)
	}
	files, err := docs.Files()
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`).FindAllStringSubmatch(index, -1) {
		target := m[1]
		if strings.Contains(target, "/") { // out of docs/cli: internal/docs checks those
			continue
		}
		if !slices.Contains(files, target) {
			t.Errorf("docs/cli/%s links %s, which is not a page", docs.Index, target)
		}
		linked[target] = true
	}
	for path, p := range pages {
		f := docs.PageFile(path)
		if !linked[f] {
			t.Errorf("docs/cli/%s does not link %s", docs.Index, f)
		}
		if line := "(" + f + "): " + p.Short + "\n"; !strings.Contains(index, line) {
			t.Errorf("docs/cli/%s does not describe %s as its page does: %q", docs.Index, f, p.Short)
		}
	}
}

// TestHelpHasOneSource: a command says in code only what it takes; what
// it does, and what its flags do, is its page's text alone.
func TestHelpHasOneSource(t *testing.T) {
	t.Parallel()
	eachCommand(newRoot(&app{}), func(c *cobra.Command) {
		path := commandPath(c)
		if c.Short != "" || c.Long != "" {
			t.Errorf("%q sets its description in code: it belongs in docs/cli/%s", c.CommandPath(), docs.PageFile(path))
		}
		flags := c.LocalNonPersistentFlags()
		if !c.HasParent() {
			flags = c.PersistentFlags()
		}
		flags.VisitAll(func(f *pflag.Flag) {
			if f.Usage != "" {
				t.Errorf("%q describes --%s in code: it belongs in docs/cli/%s", c.CommandPath(), f.Name, docs.PageFile(path))
			}
		})
	})
}
