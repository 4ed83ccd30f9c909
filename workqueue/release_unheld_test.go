package workqueue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/workqueue"
)

// A Release with no slot held (one too many: released twice, or after an Abandoned or Rejected
// outcome) made the running count negative, and the queue then admitted more requests at once
// than it has workers, silently. It must panic with a workqueue: message, as
// x/sync/semaphore does for a release of more than is held.
func TestReleaseWithoutAHeldSlotPanics(t *testing.T) {
	q, err := workqueue.New(workqueue.Config{Workers: 1, Queue: -1})
	if err != nil {
		t.Fatal(err)
	}
	var msg string
	func() {
		defer func() {
			if r := recover(); r != nil {
				msg = fmt.Sprint(r)
			}
		}()
		q.Release(false)
	}()
	if !strings.HasPrefix(msg, "workqueue: ") {
		t.Errorf("Release with nothing held: panic %q, want a workqueue: message", msg)
	}
	a := q.Acquire(context.Background(), false)
	b := q.Acquire(context.Background(), false)
	if a.Outcome != workqueue.Admitted || b.Outcome != workqueue.Rejected {
		t.Errorf("one worker, no wait list: outcomes %v and %v, want admitted and rejected", a.Outcome, b.Outcome)
	}
}

// A zero Queue (a struct literal, not built by New) has no workers and no wait list: it
// rejected every request, as if the server were overloaded, with nothing to say why. It must
// panic with a workqueue: message naming New, as the other types of this module built by a
// constructor do (budget, latency).
func TestZeroQueuePanicsWithAMessage(t *testing.T) {
	var q workqueue.Queue
	var msg string
	var a workqueue.Admission
	func() {
		defer func() {
			if r := recover(); r != nil {
				msg = fmt.Sprint(r)
			}
		}()
		a = q.Acquire(context.Background(), false)
	}()
	if !strings.HasPrefix(msg, "workqueue: ") {
		t.Errorf("Acquire on a zero Queue: outcome %v, panic %q; want a workqueue: message", a.Outcome, msg)
	}
}
