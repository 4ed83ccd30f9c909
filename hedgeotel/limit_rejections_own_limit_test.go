package hedgeotel_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgeotel"
	"github.com/hedgekit/hedge/limit"
)

// hedge.limit.rejections{kind=retry} counts retries this policy's own limit refused: the
// call's *AttemptsError has ErrLimitExceeded as its Cause. A call of a policy with no limit
// at all, whose attempt failed because an inner policy's limit refused it (an attempt that
// calls through a limited hedging transport), must not count a rejection: errors.Is finds
// the inner ErrLimitExceeded through AttemptsError.Unwrap, but the inner policy has
// already counted it under its own name.
func TestLimitRejectionsCountOnlyThePolicysOwnLimit(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := hedgeotel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()

	// The inner policy has a limit of one, held by a call still running.
	inner, _, err := m.NewPolicy("inner", hedge.Config{Limit: &limit.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	inner.NewCall(hedge.CallOptions{}).Start(now)
	refused := inner.NewCall(hedge.CallOptions{})
	refused.Start(now)
	if !errors.Is(refused.Err(), hedge.ErrLimitExceeded) {
		t.Fatalf("inner call error %v, want ErrLimitExceeded", refused.Err())
	}

	// The outer policy has no limit; its only attempt fails with the inner refusal, as an
	// HTTP client returns it (wrapped).
	users, _, err := m.NewPolicy("users", hedge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := users.NewCall(hedge.CallOptions{})
	c.Start(now)
	c.AttemptDone(now.Add(time.Millisecond), 0, hedge.Outcome{Class: hedge.Retriable,
		Err: fmt.Errorf("Get \"http://inner\": %w", refused.Err())})
	if !c.Done() {
		t.Fatal("the outer call is not over")
	}

	ms := collect(t, reader)
	equal(t, "hedge.limit.rejections", sums(t, ms, "hedge.limit.rejections"), map[string]int64{
		"hedge.operation=inner,hedge.attempt.kind=primary": 1,
	})
	equal(t, "hedge.calls", sums(t, ms, "hedge.calls"), map[string]int64{
		"hedge.operation=inner,hedge.call.outcome=rejected": 1,
		"hedge.operation=users,hedge.call.outcome=error":    1,
	})
}
