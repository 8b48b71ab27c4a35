package main

import (
	"strings"
	"unicode/utf8"
)

// pathBytes is the lossless JSON form of a path that is not valid UTF-8
// (JSON strings cannot carry such bytes: encoding/json would replace them
// with U+FFFD): the raw bytes, base64 in a "path_bytes" field beside the
// lossy "path". Empty, and so omitted, for every UTF-8 path.
func pathBytes(p string) []byte {
	if utf8.ValidString(p) {
		return nil
	}
	return []byte(p)
}

// pathBytesMap is the lossless companion of a JSON document whose paths sit
// in plain string lists: for each path that is not valid UTF-8, its lossy
// JSON string mapped to its exact bytes (base64). Nil, and so omitted,
// when every path is UTF-8.
func pathBytesMap(lists ...[]string) map[string][]byte {
	var m map[string][]byte
	for _, l := range lists {
		for _, p := range l {
			if b := pathBytes(p); b != nil {
				if m == nil {
					m = map[string][]byte{}
				}
				m[strings.ToValidUTF8(p, "\uFFFD")] = b
			}
		}
	}
	return m
}
