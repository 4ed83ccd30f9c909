package hedgeconfig

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// maxDepth is the YAML parser's limit on nesting.
const maxDepth = 10000

// locate finds in data the line and column (1-based) of the problem a parser error that
// named no line is about: the first invalid UTF-8 byte, the reference to an unknown
// anchor, the bracket nested one too deep, the end of a file that ends too soon. It returns 0, 0 when it cannot tell.
func locate(data []byte, msg string) (line, col int) {
	off := -1
	switch {
	case strings.Contains(msg, "UTF-8") || strings.Contains(msg, "UTF-16"):
		off = firstInvalidUTF8(data)
	case strings.HasPrefix(msg, "unknown anchor '"):
		name, _, _ := strings.Cut(strings.TrimPrefix(msg, "unknown anchor '"), "'")
		off = aliasOffset(data, name)
	case strings.Contains(msg, "max depth"):
		off = tooDeep(data)
	case strings.Contains(msg, "end of stream"):
		off = len(data) // an unclosed quote or bracket: the file ends where it should not
	case strings.Contains(msg, "control characters"):
		off = bytes.IndexFunc(data, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f })
	}
	if off < 0 {
		return 0, 0
	}
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	col = 1 + utf8.RuneCount(data[bytes.LastIndexByte(data[:off], '\n')+1:off])
	return line, col
}

// firstInvalidUTF8 returns the offset of the first byte of data that is not valid UTF-8,
// or -1.
func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// aliasOffset returns the offset of the first *name alias in data, or -1.
func aliasOffset(data []byte, name string) int {
	ref := []byte("*" + name)
	for i := 0; ; {
		j := bytes.Index(data[i:], ref)
		if j < 0 {
			return -1
		}
		j += i
		end := j + len(ref)
		if end == len(data) || bytes.IndexByte([]byte(" \t\r\n,]}"), data[end]) >= 0 {
			return j
		}
		i = j + 1
	}
}

// tooDeep returns the offset of the flow bracket ([ or {) that opens a nesting level past
// maxDepth, outside quoted text and comments, or -1.
func tooDeep(data []byte) int {
	depth := 0
	var quote byte
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t' || data[i-1] == '\n'):
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case c == '[' || c == '{':
			if depth++; depth > maxDepth {
				return i
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return -1
}
