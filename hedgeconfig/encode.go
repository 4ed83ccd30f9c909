package hedgeconfig

import (
	"bytes"
	"encoding"
	"reflect"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hedgekit/hedge"
)

// Marshal writes f as YAML that [Parse] reads back to the same File: the defaults block
// with every field that is not zero, and each operation with the fields where it differs
// from the defaults (a block the defaults turn on and the operation off as false).
func (f *File) Marshal() ([]byte, error) {
	root := mapping()
	defaults := mapping()
	if err := encodeDiff(defaults, reflect.ValueOf(f.Defaults.Policy), reflect.ValueOf(hedge.Config{})); err != nil {
		return nil, err
	}
	if f.Defaults.Repeatable != hedge.RepeatableDefault {
		add(defaults, idempotentKey, repeatableNode(f.Defaults.Repeatable))
	}
	add(root, "defaults", defaults)
	if len(f.Operations) > 0 {
		ops := mapping()
		for _, op := range f.Operations {
			m := mapping()
			if err := encodeDiff(m, reflect.ValueOf(op.Policy), reflect.ValueOf(f.Defaults.Policy)); err != nil {
				return nil, err
			}
			if op.Repeatable != f.Defaults.Repeatable {
				add(m, idempotentKey, repeatableNode(op.Repeatable))
			}
			add(ops, op.Name, m)
		}
		add(root, "operations", ops)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func scalar(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

func add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, scalar("!!str", key), v)
}

func repeatableNode(r hedge.Repeatability) *yaml.Node {
	switch r {
	case hedge.Repeatable:
		return scalar("!!bool", "true")
	case hedge.NotRepeatable:
		return scalar("!!bool", "false")
	}
	return scalar("!!null", "null")
}

// encodeDiff adds to m the fields of struct v that differ from base's.
func encodeDiff(m *yaml.Node, v, base reflect.Value) error {
	fields := dataFields(v.Type())
	for i, key := range fields.keys {
		if key == "" {
			continue
		}
		n, err := encodeField(v.Field(i), base.Field(i))
		if err != nil {
			return err
		}
		if n != nil {
			add(m, key, n)
		}
	}
	return nil
}

// encodeField returns the node for v, or nil when v equals base.
func encodeField(v, base reflect.Value) (*yaml.Node, error) {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer:
		switch {
		case v.IsNil() && base.IsNil():
			return nil, nil
		case v.IsNil():
			return scalar("!!bool", "false"), nil
		}
		b := base
		if base.IsNil() {
			b = reflect.New(t.Elem())
		}
		m := mapping()
		if err := encodeDiff(m, v.Elem(), b.Elem()); err != nil {
			return nil, err
		}
		if len(m.Content) == 0 {
			if base.IsNil() {
				return scalar("!!bool", "true"), nil
			}
			return nil, nil
		}
		return m, nil
	case t.Kind() == reflect.Struct && t != durationType && !t.Implements(marshalType):
		m := mapping()
		if err := encodeDiff(m, v, base); err != nil {
			return nil, err
		}
		if len(m.Content) == 0 {
			return nil, nil
		}
		return m, nil
	}
	if v.Equal(base) {
		return nil, nil
	}
	switch {
	case isNumber(t.Kind()) && ((t.Kind() >= reflect.Float32 && v.Float() == hedge.Off) || (t.Kind() < reflect.Float32 && v.Int() == hedge.Off)):
		return scalar("!!str", "off"), nil
	case t == durationType:
		return scalar("!!str", time.Duration(v.Int()).String()), nil
	case t.Implements(marshalType):
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return nil, err
		}
		return scalar("!!str", string(b)), nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return scalar("!!bool", strconv.FormatBool(v.Bool())), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return scalar("!!int", strconv.FormatInt(v.Int(), 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return scalar("!!int", strconv.FormatUint(v.Uint(), 10)), nil
	case reflect.Float32, reflect.Float64:
		// Untagged: 0.1 and 1e-12 read back as floats, 2 as an integer, which a float field
		// takes too.
		return scalar("", strconv.FormatFloat(v.Float(), 'g', -1, t.Bits())), nil
	case reflect.String:
		return scalar("!!str", v.String()), nil
	}
	return nil, nil
}
