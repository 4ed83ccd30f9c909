package hedge_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// A nil *Policy is the zero Policy: what reads or informs a policy reports nothing learnt
// (and does not panic), what runs a call panics with a hedge: message (see Policy's doc).
func TestNilPolicyIsZeroPolicy(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var zero hedge.Policy
	want := zero.MeasuredAt(now)
	var p *hedge.Policy
	for name, read := range map[string]func() hedge.Measured{
		"MeasuredAt": func() hedge.Measured { return p.MeasuredAt(now) },
		"Measured":   p.Measured,
	} {
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Fatalf("%s on a nil *Policy panicked: %v", name, v)
				}
			}()
			if got := read(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s on a nil *Policy = %+v, want the zero Policy's %+v", name, got, want)
			}
		}()
	}
	p.ReportLoad(now, 0, hedge.Load{Queued: 3, Workers: 4}) // dropped
	if q, w, ok := p.ServerQueue(now); ok || q != 0 || w != 0 {
		t.Errorf("ServerQueue on a nil *Policy = %d, %d, %v; want 0, 0, false", q, w, ok)
	}

	for _, pol := range []*hedge.Policy{nil, &zero} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "hedge: ") {
					t.Errorf("NewCall on %v: panic %q, want a hedge: message", pol, msg)
				}
			}()
			pol.NewCall(hedge.CallOptions{})
		}()
	}
}
