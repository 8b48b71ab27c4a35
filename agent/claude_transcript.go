package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxTranscriptTail bounds how much of a transcript's end is read to find
// its last assistant entry.
const maxTranscriptTail = 8 << 20

// lastAssistantUUID returns the uuid of the last assistant entry of the
// main conversation in Claude Code's transcript at path (JSON lines), or ""
// when there is none. The transcript is only read, never changed; only its
// last maxTranscriptTail bytes are looked at.
func lastAssistantUUID(path string) (string, error) {
	if path == "" || !filepath.IsAbs(path) {
		return "", nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil // nothing written yet: the first prompt
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	var r io.Reader = f
	if fi.Size() > maxTranscriptTail {
		if _, err := f.Seek(fi.Size()-maxTranscriptTail, io.SeekStart); err != nil {
			return "", err
		}
		br := bufio.NewReader(f)
		if _, err := br.ReadBytes('\n'); err != nil { // a cut line
			return "", nil
		}
		r = br
	}
	last, _, err := lastAssistantIn(r, nil)
	return last, err
}

// transcriptPrompt is a user prompt to look for in a transcript: its
// promptId and its text.
type transcriptPrompt struct{ ID, Text string }

// lastAssistantIn scans transcript lines for the last assistant entry of
// the main conversation (not a sidechain) and returns its uuid. With
// prompt set, it returns instead the last assistant entry before the last
// user entry that is that prompt (its promptId and its text), and found
// says whether there is one. (Claude Code 2.1.330 gives the entries a fork
// copies the new prompt's promptId; 2.1.197 keeps the old ones.)
func lastAssistantIn(r io.Reader, prompt *transcriptPrompt) (last string, found bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxTranscriptTail)
	before := ""
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"assistant"`)) && (prompt == nil || !bytes.Contains(line, []byte(prompt.ID))) {
			continue
		}
		var e struct {
			Type        string `json:"type"`
			UUID        string `json:"uuid"`
			IsSidechain bool   `json:"isSidechain"`
			PromptID    string `json:"promptId"`
			Message     struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &e) != nil || e.IsSidechain {
			continue
		}
		if prompt != nil && e.Type == "user" && e.PromptID == prompt.ID && promptText(e.Message.Content) == prompt.Text {
			before, found = last, true
		}
		if e.Type == "assistant" && e.UUID != "" {
			last = e.UUID
		}
	}
	if err := sc.Err(); err != nil {
		return "", false, err
	}
	if prompt != nil {
		return before, found, nil
	}
	return last, true, nil
}

// promptText is the text of a user message's content: a string, or its
// text blocks joined ("" for tool results).
func promptText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(content, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// readTail reads the file at path, or its last max bytes from the first
// whole line in them.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() <= max {
		return io.ReadAll(io.LimitReader(f, max))
	}
	if _, err := f.Seek(fi.Size()-max, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return b, err
}
