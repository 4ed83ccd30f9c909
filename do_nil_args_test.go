package hedge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// Do and DoInline refuse a zero Policy with a hedge: message; a nil context or a nil function
// got a bare nil pointer dereference instead (the nil function's only after its call had
// started, counted and taken its budget deposit, as an attempt's panic). Both must be refused
// up front, with a message naming the argument.
func TestDoRefusesNilContextAndFunctionWithAMessage(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Millisecond)})
	fn := func(context.Context) (int, error) { return 1, nil }
	type doFunc func(context.Context, *hedge.Policy, func(context.Context) (int, error)) (int, error)
	drivers := map[string]doFunc{
		"Do":       hedge.Do[int],
		"DoInline": hedge.DoInline[int],
		"DoDetached": func(ctx context.Context, p *hedge.Policy, fn func(context.Context) (int, error)) (int, error) {
			v, h, err := hedge.DoDetached(ctx, p, fn, nil)
			h.Release()
			return v, err
		},
	}
	for name, do := range drivers {
		for _, tc := range []struct {
			arg string
			ctx context.Context
			fn  func(context.Context) (int, error)
		}{
			{"Context", nil, fn},
			{"function", context.Background(), nil},
		} {
			var msg string
			func() {
				defer func() {
					if r := recover(); r != nil {
						msg = fmt.Sprint(r)
					}
				}()
				do(tc.ctx, p, tc.fn)
			}()
			if !strings.HasPrefix(msg, "hedge: ") || !strings.Contains(msg, "nil "+tc.arg) {
				t.Errorf("%s with a nil %s: panic %q, want a hedge: message naming the nil %s", name, tc.arg, msg, tc.arg)
			}
		}
	}
	if m := p.Measured(); m.Calls != 0 {
		t.Errorf("refused calls were counted: Calls = %d", m.Calls)
	}
}
