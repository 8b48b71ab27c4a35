package main

import (
	"fmt"
	"strings"

	"github.com/ckpt/ckpt/docs"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// addHelp makes the CLI reference, docs/cli (package docs), root's help.
// The commands say only what they take; each one's text, the one-line
// description, the long one and its flags', is its page, read when help
// is shown (parsing every page costs each run of ckpt a third of a
// millisecond). The pages of no command are help topics (`ckpt help
// by-hand`): cobra commands with neither Run nor subcommands, listed under
// "Additional help topics".
func addHelp(root *cobra.Command) {
	files, err := docs.Files()
	if err != nil {
		panic(fmt.Sprintf("ckpt's CLI reference: %v", err))
	}
	commands := map[string]bool{docs.Index: true}
	eachCommand(root, func(c *cobra.Command) { commands[docs.PageFile(commandPath(c))] = true })
	for _, f := range files {
		if !commands[f] {
			root.AddCommand(&cobra.Command{Use: strings.TrimSuffix(f, ".md")})
		}
	}
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		applyDocs(root)
		help(c, args)
	})
}

// applyDocs gives every command of root the text of its page.
func applyDocs(root *cobra.Command) {
	pages, err := docs.Pages()
	if err != nil {
		panic(fmt.Sprintf("ckpt's CLI reference: %v", err)) // TestHelpPages keeps it whole
	}
	eachCommand(root, func(c *cobra.Command) {
		if p, ok := pages[commandPath(c)]; ok {
			c.Short, c.Long = p.Short, p.Long
			set := func(f *pflag.Flag) {
				if text, ok := p.Flags[f.Name]; ok {
					f.Usage = text
				}
			}
			c.LocalNonPersistentFlags().VisitAll(set)
			c.PersistentFlags().VisitAll(set)
		}
	})
}

// eachCommand calls fn with c and every command below it.
func eachCommand(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		eachCommand(sub, fn)
	}
}

// commandPath is c's path below the root: "sessions rm"; "" for ckpt.
func commandPath(c *cobra.Command) string {
	if !c.HasParent() {
		return ""
	}
	if parent := commandPath(c.Parent()); parent != "" {
		return parent + " " + c.Name()
	}
	return c.Name()
}
