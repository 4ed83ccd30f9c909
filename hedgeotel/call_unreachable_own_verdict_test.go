package hedgeotel_test

import (
	"errors"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/hedgeotel"
)

// A call is "unreachable" only when the policy itself found that none of its attempts
// reached the dependency (the *AttemptsError's Cause). An attempt's own error may wrap
// another policy's ErrUnreachable (an attempt that calls through a hedging transport or a
// nested hedge.Do); errors.Is finds it through AttemptsError.Unwrap, but it says nothing
// about this call, whose first attempt here reached the dependency and got a 503.
func TestCallIsUnreachableOnlyByItsOwnVerdict(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	m, err := hedgeotel.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()

	// The inner policy: nothing it sends leaves the host.
	inner, _, err := m.NewPolicy("inner", hedge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ic := inner.NewCall(hedge.CallOptions{})
	ic.Start(now)
	for k := 0; !ic.Done() && k < 10; k++ {
		ic.AttemptDone(now, k, hedge.Outcome{Class: hedge.Retriable, Unsent: true, Err: errors.New("connection refused")})
	}
	if !errors.Is(ic.Err(), hedge.ErrUnreachable) {
		t.Fatalf("inner call error %v, want ErrUnreachable", ic.Err())
	}

	// The outer policy: its first attempt reaches the dependency and fails with a 503; its
	// retry goes through the inner policy and fails with the inner call's error.
	users, _, err := m.NewPolicy("users", hedge.Config{Attempts: 2, Budget: budget.Config{Off: true},
		Backoff: hedge.Backoff{Initial: time.Millisecond, Jitter: hedge.Off}})
	if err != nil {
		t.Fatal(err)
	}
	c := users.NewCall(hedge.CallOptions{})
	c.Start(now)
	var retryAt time.Time
	for _, a := range c.AttemptDone(now.Add(time.Millisecond), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("503")}) {
		if a.Kind == hedge.ArmTimer {
			retryAt = a.At
		}
	}
	if retryAt.IsZero() {
		t.Fatal("no retry was scheduled")
	}
	c.TimerFired(retryAt)
	c.AttemptDone(retryAt.Add(time.Millisecond), 1, hedge.Outcome{Class: hedge.Retriable, Err: ic.Err()})
	if !c.Done() {
		t.Fatal("the outer call is not over")
	}
	var ae *hedge.AttemptsError
	if !errors.As(c.Err(), &ae) || ae.Cause != nil {
		t.Fatalf("outer call error %v, want an AttemptsError without a cause", c.Err())
	}

	equal(t, "hedge.calls", sums(t, collect(t, reader), "hedge.calls"), map[string]int64{
		"hedge.operation=inner,hedge.call.outcome=unreachable": 1,
		"hedge.operation=users,hedge.call.outcome=error":       1,
	})
}
