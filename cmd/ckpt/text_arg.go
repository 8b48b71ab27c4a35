package main

import (
	"fmt"
	"io"
	"strings"
)

// maxTextArg bounds a prompt or message read from stdin.
const maxTextArg = 64 << 20

// textArg joins a command's text arguments; a lone "-" reads the text from
// stdin instead, for prompts too long for the command line. Empty text is
// a usage error naming what.
func (a *app) textArg(args []string, what string) (string, error) {
	text := strings.Join(args, " ")
	if len(args) == 1 && args[0] == "-" {
		in := a.stdin
		if in == nil {
			in = strings.NewReader("")
		}
		b, err := io.ReadAll(io.LimitReader(in, maxTextArg+1))
		if err != nil {
			return "", fmt.Errorf("read %s from stdin: %w", what, err)
		}
		if len(b) > maxTextArg {
			return "", usagef("%s on stdin is over %d MiB", what, maxTextArg>>20)
		}
		text = strings.TrimSuffix(string(b), "\n")
	}
	if strings.TrimSpace(text) == "" {
		return "", usagef("%s is empty", what)
	}
	return text, nil
}
