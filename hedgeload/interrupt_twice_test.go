//go:build unix

package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// The first interrupt ends the run's context, and the run winds down; a second ends the
// process at once, whatever the run is still doing, however soon after the first it comes.
// NotifyContext alone kept catching every interrupt, so a slow teardown could not be cut
// short; restoring the default action after the first let a second that came at once be lost. The test runs itself as the process
// to interrupt: the child takes the context, says so, and then ignores it.
func TestSecondInterruptEndsTheProcess(t *testing.T) {
	if os.Getenv("HEDGELOAD_INTERRUPT_CHILD") == "1" {
		ctx, stop := interruptContext()
		defer stop()
		os.Stdout.WriteString("ready\n")
		<-ctx.Done()
		os.Stdout.WriteString("interrupted\n")
		time.Sleep(20 * time.Second) // a teardown that takes too long
		os.Stdout.WriteString("outlived the second interrupt\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondInterruptEndsTheProcess$")
	cmd.Env = append(os.Environ(), "HEDGELOAD_INTERRUPT_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case l := <-lines:
			if l != want {
				t.Fatalf("the child said %q, want %q", l, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the child did not say %q within 10s", want)
		}
	}
	expect("ready")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	expect("interrupted")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for range lines { // drain, so the child never blocks on its stdout
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("the child ended with %v; want exit status 130, at the second interrupt", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the child outlived a second interrupt by 10s")
	}
}
