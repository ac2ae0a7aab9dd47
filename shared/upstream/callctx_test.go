package upstream

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestCallContextAsWithDeadline: a call's context answers as
// context.WithDeadline's would, before and after its deadline, with or
// without a timer made, and so do its children; it ends with its parent.
func TestCallContextAsWithDeadline(t *testing.T) {
	tests := []struct {
		name string
		// wait makes the timer (something waits on Done) before the deadline.
		wait bool
	}{
		{"no timer made", false},
		{"timer made", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := withCallDeadline(context.Background(), time.Second)
				defer c.release()
				if d, ok := c.Deadline(); !ok || !d.Equal(time.Now().Add(time.Second)) {
					t.Fatalf("Deadline() = %v, %v", d, ok)
				}
				var child context.Context
				if tt.wait {
					var cancel context.CancelCauseFunc
					child, cancel = context.WithCancelCause(c)
					defer cancel(nil)
				}
				if err := c.Err(); err != nil {
					t.Fatalf("Err() before the deadline = %v", err)
				}
				time.Sleep(time.Second)
				synctest.Wait()
				if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Err() at the deadline = %v", err)
				}
				select {
				case <-c.Done():
				default:
					t.Fatal("Done() is open after the deadline")
				}
				if child != nil {
					if err, cause := child.Err(), context.Cause(child); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(cause, context.DeadlineExceeded) {
						t.Fatalf("the child: Err() = %v, Cause() = %v", err, cause)
					}
				}
			})
		})
	}
}

// TestCallContextEndsWithItsParent: an earlier deadline of the parent is
// the call's, and a parent cancelled ends the call, whether or not the
// call made a timer (the direct transport watches the parent itself).
func TestCallContextEndsWithItsParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		c := withCallDeadline(parent, time.Second)
		defer c.release()
		if d, _ := c.Deadline(); !d.Equal(time.Now().Add(time.Millisecond)) {
			t.Fatalf("Deadline() = %v, want the parent's", d)
		}
	})
	parent, cancel := context.WithCancel(context.Background())
	c := withCallDeadline(parent, time.Hour)
	defer c.release()
	stopped := make(chan struct{})
	watch(c, func() { close(stopped) })
	cancel()
	<-stopped
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err() after the parent's cancel = %v", err)
	}
	<-c.Done()
}

// TestCallContextReleased: after its release a call's context is done
// (Canceled), with or without a timer, and its children are told.
func TestCallContextReleased(t *testing.T) {
	for _, made := range []bool{false, true} {
		c := withCallDeadline(context.Background(), time.Hour)
		var child context.Context = context.Background()
		if made {
			var cancel context.CancelFunc
			child, cancel = context.WithCancel(c)
			defer cancel()
		}
		c.release()
		c.release()
		<-c.Done()
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("made %v: Err() after release = %v", made, err)
		}
		if made {
			<-child.Done()
		}
	}
}
