package hedgehttp_test

import (
	"testing"

	"github.com/hedgekit/hedge/hedgehttp"
)

// A nil function given to OnClose is ignored: Close still runs, and runs the functions
// registered after it.
func TestOnCloseIgnoresNil(t *testing.T) {
	tr, err := hedgehttp.NewTransport(hedgehttp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	tr.OnClose(nil)
	tr.OnClose(func() { ran = true })
	if err := tr.Close(); err != nil || !ran {
		t.Errorf("Close = %v, later function run: %v; want nil and run", err, ran)
	}
	tr.OnClose(nil) // after Close: would be called at once
}
