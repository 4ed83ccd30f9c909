package hedgeotel_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
	"github.com/hedgekit/hedge/hedgeotel"
)

// A Metrics not built by New (&hedgeotel.Metrics{}) has no instruments. Only a nil *Metrics is
// documented as recording nothing; the zero value used to panic on a nil meter or
// instrument (Watch, NewPolicy, NewTransport at once; Observer's function at the first
// event, inside the policy). Each must name New: the functions that return an error return
// one, the observers panic when they are asked for, before any event.
func TestZeroMetricsNamesNew(t *testing.T) {
	// panicOf runs f and returns its panic; a call that does not return within a second
	// (a zero Metrics once panicked holding its mutex, and the next call waited for ever) is
	// reported as such.
	panicOf := func(f func()) (msg string) {
		done := make(chan string, 1)
		go func() {
			defer func() {
				msg := ""
				if v := recover(); v != nil {
					msg = fmt.Sprint(v)
				}
				done <- msg
			}()
			f()
		}()
		select {
		case msg = <-done:
			return msg
		case <-time.After(time.Second):
			return "(did not return within 1s)"
		}
	}
	namesNew := func(s string) bool { return strings.HasPrefix(s, "hedgeotel:") && strings.Contains(s, "New") }
	m := &hedgeotel.Metrics{}
	var err error
	if msg := panicOf(func() { _, err = m.Watch(func() map[string]hedge.Measured { return nil }) }); msg != "" || err == nil || !namesNew(err.Error()) {
		t.Errorf("Watch on a zero Metrics: panic %q, error %v; want an error naming New", msg, err)
	}
	if msg := panicOf(func() { _, _, err = m.NewPolicy("op", hedge.Config{Trigger: hedge.After(time.Millisecond)}) }); msg != "" || err == nil || !namesNew(err.Error()) {
		t.Errorf("NewPolicy on a zero Metrics: panic %q, error %v; want an error naming New", msg, err)
	}
	if msg := panicOf(func() { _, err = m.NewTransport(hedgehttp.Config{}) }); msg != "" || err == nil || !namesNew(err.Error()) {
		t.Errorf("NewTransport on a zero Metrics: panic %q, error %v; want an error naming New", msg, err)
	}
	if msg := panicOf(func() {
		if obs := m.Observer("op"); obs != nil {
			obs(hedge.Event{Kind: hedge.CallFinished})
		}
	}); !namesNew(msg) {
		t.Errorf("Observer on a zero Metrics: panic %q, want a hedgeotel: message naming New", msg)
	}
	if msg := panicOf(func() {
		if obs := m.KeyedObserver(); obs != nil {
			obs("op", hedge.Event{Kind: hedge.CallFinished})
		}
	}); !namesNew(msg) {
		t.Errorf("KeyedObserver on a zero Metrics: panic %q, want a hedgeotel: message naming New", msg)
	}
}
