package hedgeconfig

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/hedgekit/hedge"
)

var (
	durationType  = reflect.TypeFor[time.Duration]()
	unmarshalType = reflect.TypeFor[encoding.TextUnmarshaler]()
	marshalType   = reflect.TypeFor[encoding.TextMarshaler]()
)

// idempotentKey is the one key of an operation that is not a hedge.Config field.
const idempotentKey = "idempotent"

// Parse parses a policy file's content; name is used in errors (usually the file's path).
func Parse(name string, data []byte) (f *File, err error) {
	defer func() {
		// The YAML parser is not ours: whatever it does on hostile input, the caller gets an
		// error, never a panic.
		if r := recover(); r != nil {
			f, err = nil, &Error{File: name, Err: fmt.Errorf("cannot parse: %v", r)}
		}
	}()
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		// JSON: a tab is white space there (a raw tab cannot appear inside a JSON string),
		// but YAML refuses some tabs; as spaces they change nothing else.
		data = bytes.ReplaceAll(data, []byte("\t"), []byte(" "))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(name, data, err)
	}
	if err := oneDocument(name, data); err != nil {
		return nil, err
	}
	d := decoder{file: name}
	f = &File{Defaults: Operation{Name: DefaultsName}}
	if doc.Kind == 0 {
		// Nothing but white space, comments or document markers: a truncated or
		// half-written deployment, not a policy (one that wants the defaults alone says so
		// with "defaults: {}"), and loading it would silently drop every breaker and limit.
		return nil, &Error{File: name, Err: errEmpty}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	root = resolve(root)
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		if root.Value != "" { // null or ~, written out
			return nil, d.errorf(root, "", "the file holds only %s: want a mapping with the keys defaults and operations (defaults: {} for the defaults alone)", root.Value)
		}
		return nil, d.wrap(root, "", errEmpty)
	}
	if root.Kind != yaml.MappingNode {
		return nil, d.errorf(root, "", "the file must be a mapping with the keys defaults and operations")
	}
	var defaultsNode, opsNode *yaml.Node
	if err := d.eachKey(root, "", func(key string, k, v *yaml.Node) error {
		switch key {
		case "defaults":
			defaultsNode = v
		case "operations":
			opsNode = v
		default:
			return d.errorf(k, key, "unknown key (want defaults or operations)")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if defaultsNode != nil {
		if err := d.operation(defaultsNode, "defaults", &f.Defaults); err != nil {
			return nil, err
		}
	}
	if err := d.validate(defaultsNode, "defaults", f.Defaults.Policy); err != nil {
		return nil, err
	}
	if opsNode == nil {
		return f, nil
	}
	if opsNode.Kind == yaml.ScalarNode && opsNode.Tag == "!!null" {
		return f, nil
	}
	if err := d.operations(opsNode, f); err != nil {
		return nil, err
	}
	return f, nil
}

// operations decodes the operations mapping n into f.Operations, each over f's defaults.
func (d *decoder) operations(n *yaml.Node, f *File) error {
	if n.Kind != yaml.MappingNode {
		return d.errorf(n, "operations", "must be a mapping from operation names to policies")
	}
	first := map[matcher]*yaml.Node{} // each operation's key, by what it matches
	keys := map[string]*yaml.Node{}   // each operation's key node, by name
	err := d.eachKey(n, "operations", func(key string, k, v *yaml.Node) error {
		path := child("operations", key)
		if key == DefaultsName {
			// File.Lookup gives the defaults block for this name (hedgesim -operation too):
			// the operation could never be looked up, and would be simulated as the defaults.
			return d.errorf(k, path, "the name %q is the defaults block's (File.Lookup): write the host in another case, such as %q, which matches the same requests", key, "Defaults")
		}
		m, err := parseName(key)
		if err != nil {
			return d.wrap(k, path, err)
		}
		if prev, ok := first[m]; ok {
			// Two names the transports cannot tell apart: the second could never match.
			return d.errorf(k, path, "the same operation as %s at %s (hosts match in any case, paths in their clean form without a trailing slash)",
				child("operations", prev.Value), position(prev))
		}
		first[m] = k
		op := Operation{Name: key, Policy: clone(f.Defaults.Policy), Repeatable: f.Defaults.Repeatable, match: m}
		if err := d.operation(v, path, &op); err != nil {
			return err
		}
		if err := d.validate(v, path, op.Policy); err != nil {
			return err
		}
		f.Operations = append(f.Operations, op)
		keys[key] = k
		return nil
	})
	if err != nil {
		return err
	}
	return d.grpcRepeatability(f, keys)
}

// grpcRepeatability refuses a gRPC method that is not idempotent under a service that is:
// hedgegrpc takes a service's idempotent: true for every method of it (Config.Idempotent
// names services as well as methods) and has no word for an exception, so the method would
// be sent twice all the same, which its idempotent: false (its own or the defaults') says it
// must not be. Over HTTP the most specific operation decides, and no such conflict exists.
func (d *decoder) grpcRepeatability(f *File, keys map[string]*yaml.Node) error {
	services := map[string]*Operation{}
	for i := range f.Operations {
		if op := &f.Operations[i]; op.match.grpc && op.match.method == "" && op.Repeatable == hedge.Repeatable {
			services[op.match.service] = op
		}
	}
	for i := range f.Operations {
		op := &f.Operations[i]
		if !op.match.grpc || op.match.method == "" || op.Repeatable != hedge.NotRepeatable {
			continue
		}
		if svc, ok := services[op.match.service]; ok {
			k := keys[op.Name]
			return d.errorf(k, child("operations", op.Name), "idempotent is false, but %s, whose every method gRPC hedging takes for idempotent, is true (at %s): name the service's idempotent methods one by one instead",
				child("operations", svc.Name), position(keys[svc.Name]))
		}
	}
	return nil
}

// oneDocument refuses a second document in data. yaml.Unmarshal reads the first document
// and ignores whatever follows it, unparsed: two files written one after the other, or text
// after "...", would load as the first part alone and drop the rest without a word. A
// document with nothing in it (a trailing ---) holds no policy and is let be.
func oneDocument(name string, data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first yaml.Node
	if err := dec.Decode(&first); err != nil {
		return nil // nothing at all (io.EOF): the empty-file check says so
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return syntaxError(name, data, err)
		}
		if len(next.Content) == 1 && next.Content[0].Tag == "!!null" && next.Content[0].Value == "" {
			continue
		}
		return &Error{File: name, Line: next.Line, Column: next.Column,
			Err: errors.New("a second YAML document: a policy file is one document, a mapping with the keys defaults and operations")}
	}
}

// errEmpty is the error of a file with nothing in it.
var errEmpty = errors.New("the file is empty: want a mapping with the keys defaults and operations (defaults: {} for the defaults alone)")

// syntaxError turns the YAML parser's error ("yaml: line 3: ...") into an *Error. Some of
// the parser's errors name no line (invalid UTF-8, an unknown anchor, nesting too deep on
// the first line): the line and column are then found in data.
func syntaxError(name string, data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &Error{File: name, Err: errors.New(msg)}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if line, err := strconv.Atoi(n); err == nil {
				e.Line, e.Err = line, errors.New(after)
			}
		}
	}
	if e.Line == 0 {
		e.Line, e.Column = locate(data, msg)
	}
	if e.Line == 0 {
		e.Line = 1 // the parser leaves out the line of a problem on the first one
	}
	return e
}

type decoder struct {
	file string
}

func (d *decoder) errorf(n *yaml.Node, field, format string, args ...any) error {
	return d.wrap(n, field, fmt.Errorf(format, args...))
}

func (d *decoder) wrap(n *yaml.Node, field string, err error) error {
	return &Error{File: d.file, Line: n.Line, Column: n.Column, Field: field, Err: err}
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// eachKey calls fn for each key of mapping n, in order, refusing duplicate and non-string
// keys.
func (d *decoder) eachKey(n *yaml.Node, path string, fn func(key string, k, v *yaml.Node) error) error {
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || (k.Tag != "!!str" && k.Tag != "!!int" && k.Tag != "!!float") {
			return d.errorf(k, path, "keys must be names")
		}
		if prev, ok := seen[k.Value]; ok {
			return d.errorf(k, child(path, k.Value), "repeated key (first at %s)", position(prev))
		}
		seen[k.Value] = k
		if err := fn(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

// child is the path of key under path, in the one form every error uses: an operation's
// name quoted in brackets (operations["api.example.com"], whose dots are not fields), a
// field's key after a dot (defaults.budget.ratio).
func child(path, key string) string {
	if path == "operations" {
		return "operations[" + strconv.Quote(key) + "]"
	}
	return join(path, key)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// position is where node n is, as errors write it: "line 3:5".
func position(n *yaml.Node) string {
	return fmt.Sprintf("line %d:%d", n.Line, n.Column)
}

// operation decodes an operation's mapping onto op, whose Policy already holds the
// defaults.
func (d *decoder) operation(n *yaml.Node, path string, op *Operation) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // "name:" with nothing under it: the defaults
	}
	if n.Kind != yaml.MappingNode {
		return d.errorf(n, path, "must be a mapping of policy fields")
	}
	v := reflect.ValueOf(&op.Policy).Elem()
	return d.eachKey(n, path, func(key string, k, val *yaml.Node) error {
		if key == idempotentKey {
			switch {
			case val.Kind == yaml.ScalarNode && val.Tag == "!!null":
				op.Repeatable = hedge.RepeatableDefault
			case val.Kind == yaml.ScalarNode && val.Tag == "!!bool" && isBool(val.Value):
				op.Repeatable = hedge.NotRepeatable
				if isTrue(val.Value) {
					op.Repeatable = hedge.Repeatable
				}
			default:
				return d.errorf(val, join(path, key), "must be true, false or null, got %s", describe(val))
			}
			return nil
		}
		return d.field(v, key, k, val, path)
	})
}

// field sets the field of struct v whose key is key.
func (d *decoder) field(v reflect.Value, key string, k, val *yaml.Node, path string) error {
	fields := dataFields(v.Type())
	i, ok := fields.index[key]
	if !ok {
		return d.errorf(k, join(path, key), "unknown field (known: %s)", strings.Join(fields.names, ", "))
	}
	return d.value(v.Field(i), val, join(path, key))
}

// value decodes n into v.
// It is long because it is one case per kind of value the file format holds, each with its
// own error, and a reader wants them side by side.
func (d *decoder) value(v reflect.Value, n *yaml.Node, path string) error {
	t := v.Type()
	switch {
	case t == durationType:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!int" && n.Value == "0" {
			v.SetInt(0)
			return nil
		}
		if isOff(n) {
			v.SetInt(hedge.Off)
			return nil
		}
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return d.errorf(n, path, "must be a duration such as 20ms or 1m30s, got %s", describe(n))
		}
		dur, err := time.ParseDuration(n.Value)
		if err != nil {
			return d.errorf(n, path, "must be a duration such as 20ms or 1m30s, got %q", n.Value)
		}
		v.SetInt(int64(dur))
		return nil
	case reflect.PointerTo(t).Implements(unmarshalType) && t.Kind() != reflect.Pointer:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return d.errorf(n, path, "must be text, got %s", describe(n))
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			return d.wrap(n, path, err)
		}
		return nil
	}
	if isOff(n) && isNumber(t.Kind()) {
		// off is hedge.Off, the one spelling of off: whether the field takes it is the
		// policy's rule, checked with the others.
		switch {
		case t.Kind() >= reflect.Float32:
			v.SetFloat(hedge.Off)
		default:
			v.SetInt(hedge.Off)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || !isBool(n.Value) {
			return d.errorf(n, path, "must be true or false, got %s", describe(n))
		}
		v.SetBool(isTrue(n.Value))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!float" && isDigits(n.Value) {
			// The parser reads a whole number too long for 64 bits as a float.
			return d.errorf(n, path, "must be a whole number that fits in %d bits, got %s", t.Bits(), n.Value)
		}
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			return d.errorf(n, path, "must be a whole number, got %s", describe(n))
		}
		if leadingZero(n.Value) {
			return d.errorf(n, path, "%s", leadingZeroMsg(n.Value))
		}
		i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, t.Bits())
		if err != nil {
			return d.errorf(n, path, "must be a whole number that fits in %d bits, got %s", t.Bits(), n.Value)
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!float" && isDigits(n.Value) {
			return d.errorf(n, path, "must be a whole number >= 0 that fits in %d bits, got %s", t.Bits(), n.Value)
		}
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			return d.errorf(n, path, "must be a whole number, got %s", describe(n))
		}
		if leadingZero(n.Value) {
			return d.errorf(n, path, "%s", leadingZeroMsg(n.Value))
		}
		i, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 0, t.Bits())
		if err != nil {
			return d.errorf(n, path, "must be a whole number >= 0 that fits in %d bits, got %s", t.Bits(), n.Value)
		}
		v.SetUint(i)
	case reflect.Float32, reflect.Float64:
		var x float64
		var err error
		switch {
		case n.Kind == yaml.ScalarNode && n.Tag == "!!float":
			var f float64
			err = yaml.Unmarshal([]byte(n.Value), &f)
			x = f
		case n.Kind == yaml.ScalarNode && n.Tag == "!!int" && leadingZero(n.Value):
			return d.errorf(n, path, "%s", leadingZeroMsg(n.Value))
		case n.Kind == yaml.ScalarNode && n.Tag == "!!int":
			x, err = strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		default:
			return d.errorf(n, path, "must be a number, got %s", describe(n))
		}
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return d.errorf(n, path, "must be a finite number, got %s", n.Value)
		}
		v.SetFloat(x)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return d.errorf(n, path, "must be text, got %s", describe(n))
		}
		v.SetString(n.Value)
	case reflect.Struct:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			return d.errorf(n, path, "must be a mapping of fields, got %s", describe(n))
		}
		return d.eachKey(n, path, func(key string, k, val *yaml.Node) error {
			return d.field(v, key, k, val, path)
		})
	case reflect.Pointer:
		// An optional block: a mapping turns it on (over the defaults' block, if any), true
		// turns it on as it is, false or null turns it off.
		if n.Kind == yaml.ScalarNode && (n.Tag == "!!bool" && isBool(n.Value) || n.Tag == "!!null") {
			if n.Tag == "!!null" || !isTrue(n.Value) {
				v.SetZero()
				return nil
			}
			if v.IsNil() {
				v.Set(reflect.New(t.Elem()))
			}
			return nil
		}
		if t.Elem().Kind() == reflect.Struct && n.Kind != yaml.MappingNode {
			return d.errorf(n, path, "must be a mapping of fields, true or false, got %s", describe(n))
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return d.value(v.Elem(), n, path)
	default:
		return d.errorf(n, path, "cannot be set from a file")
	}
	return nil
}

// isBool reports whether s is a boolean as the parser spells one. The parser tags only
// these as !!bool; a tag written out (!!bool yes) makes a boolean of any text, which must be
// an error, not false (strconv.ParseBool's reading, its error dropped) or, for a block, on.
func isBool(s string) bool { return isTrue(s) || s == "false" || s == "False" || s == "FALSE" }

// isTrue reports whether s is true as the parser spells it.
func isTrue(s string) bool { return s == "true" || s == "True" || s == "TRUE" }

// isOff reports whether n is the word off.
func isOff(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!str" && strings.EqualFold(n.Value, "off")
}

// isNumber reports whether k is a signed integer or a float (the kinds hedge.Off fits).
func isNumber(k reflect.Kind) bool {
	return (k >= reflect.Int && k <= reflect.Int64) || k == reflect.Float32 || k == reflect.Float64
}

// leadingZero reports whether s is a whole number written with a leading zero, as 010: YAML
// 1.1 (and Go) read that as octal 8, YAML 1.2 as decimal 10, and a person most often means 10.
// The file takes neither reading: the decoder asks for 10, or 0o10 for octal.
func leadingZero(s string) bool {
	s = strings.ReplaceAll(strings.TrimLeft(s, "+-"), "_", "")
	return len(s) > 1 && s[0] == '0' && s[1] >= '0' && s[1] <= '9'
}

// leadingZeroMsg is the error for a number that leadingZero rejects.
func leadingZeroMsg(s string) string {
	return fmt.Sprintf("must not start with a zero, got %s: write it in decimal without one, or with 0o for octal", s)
}

// isDigits reports whether s is a whole number in decimal, with an optional sign.
func isDigits(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return s != "" && strings.Trim(s, "0123456789_") == ""
}

// describe names a node's type for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return strconv.Quote(n.Value)
		case "!!null":
			return "null"
		}
		return n.Value
	}
	return "something else"
}

// validate checks cfg as a policy would ([hedge.Config.Validate]) and turns its error into an
// *Error that points at the field it names, when the file sets it, or at the operation.
func (d *decoder) validate(n *yaml.Node, path string, cfg hedge.Config) error {
	err := cfg.Validate()
	if err == nil {
		return nil
	}
	if n == nil {
		return &Error{File: d.file, Field: path, Err: err}
	}
	msg := err.Error()
	at, field := n, path
	// The policy's errors name Go fields ("Budget: budget: Config.Ratio must be ...");
	// point at the deepest one the file sets.
	var find func(n *yaml.Node, path string, t reflect.Type)
	find = func(n *yaml.Node, path string, t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if n.Kind != yaml.MappingNode || t.Kind() != reflect.Struct {
			return
		}
		fields := dataFields(t)
		best, bestAt := -1, len(msg)
		for i := 0; i+1 < len(n.Content); i += 2 {
			fi, ok := fields.index[resolve(n.Content[i]).Value]
			if !ok {
				continue
			}
			if j := wordIndex(msg, t.Field(fi).Name); j >= 0 && j < bestAt {
				best, bestAt = i, j
			}
		}
		if best >= 0 {
			k := resolve(n.Content[best])
			at, field = resolve(n.Content[best+1]), join(path, k.Value)
			find(at, field, t.Field(fields.index[k.Value]).Type)
		}
	}
	find(n, path, reflect.TypeFor[hedge.Config]())
	return d.wrap(at, field, err)
}

// wordIndex returns where msg first contains word not inside a longer identifier, or -1.
func wordIndex(msg, word string) int {
	for i := 0; ; {
		j := strings.Index(msg[i:], word)
		if j < 0 {
			return -1
		}
		j += i
		before := j == 0 || !isIdent(rune(msg[j-1]))
		end := j + len(word)
		after := end == len(msg) || !isIdent(rune(msg[end]))
		if before && after {
			return j
		}
		i = j + 1
	}
}

func isIdent(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// fieldSet is the data fields of a struct type, by key.
type fieldSet struct {
	index map[string]int
	names []string // keys in field order
	keys  []string // by field index; "" for fields a file cannot set
}

// dataFields lists the fields of t a file can set: exported, and data (numbers, text,
// booleans, durations, text forms, and structs of them), not functions.
func dataFields(t reflect.Type) fieldSet {
	fs := fieldSet{index: map[string]int{}, keys: make([]string, t.NumField())}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || !isData(f.Type, 0) {
			continue
		}
		key := snake(f.Name)
		fs.index[key] = i
		fs.keys[i] = key
		fs.names = append(fs.names, key)
	}
	return fs
}

func isData(t reflect.Type, depth int) bool {
	if depth > 4 {
		return false
	}
	if t == durationType || (reflect.PointerTo(t).Implements(unmarshalType) && t.Implements(marshalType)) {
		return true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	case reflect.Pointer:
		return t.Elem().Kind() == reflect.Struct && isData(t.Elem(), depth+1)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && isData(f.Type, depth+1) {
				return true
			}
		}
	}
	return false
}

// snake turns a Go field name into its key: MinimumDelay → minimum_delay, RTTTolerance →
// rtt_tolerance.
func snake(name string) string {
	var b strings.Builder
	r := []rune(name)
	for i, c := range r {
		if unicode.IsUpper(c) {
			if i > 0 && (unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1]) ||
				(i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1]))) {
				b.WriteByte('_')
			}
			c = unicode.ToLower(c)
		}
		b.WriteRune(c)
	}
	return b.String()
}

// clone copies a configuration deeply enough that an operation can change its blocks
// without changing the defaults'.
func clone(c hedge.Config) hedge.Config {
	v := reflect.ValueOf(&c).Elem()
	cloneValue(v)
	return c
}

func cloneValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || v.Elem().Kind() != reflect.Struct {
			return
		}
		p := reflect.New(v.Elem().Type())
		p.Elem().Set(v.Elem())
		cloneValue(p.Elem())
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				cloneValue(f)
			}
		}
	}
}
