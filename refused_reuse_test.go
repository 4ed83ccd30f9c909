package hedge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/limit"
)

// A DoInline driver goes back to its policy's pool after a call the breaker or the limit
// refused, and serves the next calls whatever came before: a detached winner (which took the
// driver's first attempt state with it), refusals, then calls that run. Each call gets its
// own answer and its own error.
func TestDriverReusedAfterARefusedCall(t *testing.T) {
	ctx := context.Background()
	answer := func(v int) func(context.Context) (int, error) {
		return func(context.Context) (int, error) { return v, nil }
	}
	// The limit: one call at a time, and a call that waits on a channel holds the permit.
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Hour), Limit: &limit.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}})
	if v, hold, err := hedge.DoInlineDetached(ctx, p, answer(7), nil); v != 7 || err != nil {
		t.Fatalf("detached call: %v, %v", v, err)
	} else {
		hold.Release()
	}
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := hedge.DoInline(ctx, p, func(context.Context) (int, error) { close(started); <-release; return 1, nil })
		done <- err
	}()
	<-started
	for i := range 3 {
		if _, err := hedge.DoInline(ctx, p, answer(2)); !errors.Is(err, hedge.ErrLimitExceeded) {
			t.Fatalf("call %d while the permit is held: err %v, want ErrLimitExceeded", i, err)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if v, err := hedge.DoInline(ctx, p, answer(10+i)); v != 10+i || err != nil {
			t.Fatalf("call %d after the refusals: %v, %v", i, v, err)
		}
	}
	// The breaker: a detached winner still held, then a failure through Do opens the
	// breaker, and the refused calls that follow come back with the breaker's error.
	b := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Hour), Breaker: &breaker.Config{ConsecutiveFailures: 1, OpenFor: time.Hour}})
	v, hold, err := hedge.DoInlineDetached(ctx, b, answer(8), nil)
	if v != 8 || err != nil {
		t.Fatalf("detached call: %v, %v", v, err)
	}
	if _, err := hedge.Do(ctx, b, func(context.Context) (int, error) { return 0, errors.New("down") }); err == nil {
		t.Fatal("failing call: no error")
	}
	for i := range 3 {
		if _, err := hedge.DoInline(ctx, b, answer(1)); !errors.Is(err, hedge.ErrBreakerOpen) {
			t.Fatalf("call %d with the breaker open: err %v, want ErrBreakerOpen", i, err)
		}
	}
	hold.Release()
}
