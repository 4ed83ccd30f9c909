package hedgeconfig_test

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"

	"github.com/hedgekit/hedge/hedgeconfig"
	"github.com/hedgekit/hedge/hedgehttp"
)

// A service whose hedging policies follow their file while it runs: a valid change is
// swapped in, a broken one is reported and the running policies stay.
func ExampleWatch() {
	dir, _ := os.MkdirTemp("", "policy")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "policy.yaml")
	os.WriteFile(path, []byte("defaults:\n  trigger: none\n"), 0o600)

	w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{
		OnReload: func(f *hedgeconfig.File, err error) {
			if err != nil {
				log.Printf("policy file refused, %s keeps running: %v", f.Defaults.Policy.Trigger, err)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	tr, err := w.NewTransport(hedgehttp.Config{}) // Next, Replicas, Observer as usual
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: tr}
	_ = client

	// The file changes (Watch reads it every 5s; Reload reads it now).
	os.WriteFile(path, []byte("defaults:\n  trigger: quantile 0.95\n"), 0o600)
	fmt.Println(w.Reload(), w.File().Defaults.Policy.Trigger)

	os.WriteFile(path, []byte("defaults:\n  trigger: quantile 2\n"), 0o600)
	var fe *hedgeconfig.Error
	if err := w.Reload(); errors.As(err, &fe) {
		fmt.Printf("refused, line %d; running: %s\n", fe.Line, w.File().Defaults.Policy.Trigger)
	}
	// Output:
	// <nil> quantile 0.95
	// refused, line 2; running: quantile 0.95
}
