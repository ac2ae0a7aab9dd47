package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// Dispatcher sends each event to every channel, and logs every delivery
// and every failure (channel, event, confirmation id; never a link). It is
// safe for concurrent use.
type Dispatcher struct {
	channels []Channel // guarded by mu: SetChannels replaces it
	logger   *slog.Logger

	// ctx bounds background deliveries; cancel aborts them when Close gives up.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards channels, and closed and wg.Add against Close's wg.Wait
	closed bool
	wg     sync.WaitGroup
}

// NewDispatcher returns a Dispatcher for channels. Failed deliveries are
// logged to logger (nil discards).
func NewDispatcher(channels []Channel, logger *slog.Logger) *Dispatcher {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Dispatcher{
		channels: append([]Channel(nil), channels...),
		logger:   logger,
		ctx:      ctx,
		cancel:   cancel,
	}
}

// Channels returns the dispatcher's channels (a copy of the slice).
func (d *Dispatcher) Channels() []Channel {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Channel(nil), d.channels...)
}

// SetChannels replaces the channels for the events sent after it returns
// (a deployment re-read its configuration); deliveries under way finish
// on the channels they started with.
func (d *Dispatcher) SetChannels(channels []Channel) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.channels = append([]Channel(nil), channels...)
}

// channelsFor returns the channels that take events of type typ.
func (d *Dispatcher) channelsFor(typ string) []Channel {
	var out []Channel
	for _, ch := range d.Channels() {
		if wants(ch, typ) {
			out = append(out, ch)
		}
	}
	return out
}

// delivered logs the end of one delivery: Info when it succeeded, Error
// when it failed.
func (d *Dispatcher) delivered(ctx context.Context, ch Channel, ev Event, err error) {
	if err != nil {
		d.logger.ErrorContext(ctx, "notify: delivery failed", "channel", ch.Name(),
			"event", ev.Type, "confirmation_id", ev.Confirmation.ID, "err", err)
		return
	}
	d.logger.InfoContext(ctx, "notify: delivered", "channel", ch.Name(),
		"event", ev.Type, "confirmation_id", ev.Confirmation.ID)
}

// Notify sends ev to every channel in the background and returns at once:
// each channel's delivery, with its retries, runs in its own goroutine, and
// failures are logged. After Close, events are dropped (and logged).
func (d *Dispatcher) Notify(ev Event) {
	d.NotifyEach(ev, nil)
}

// NotifyEach is Notify with a link per channel: for each channel it calls
// linkFor(channel.Name()) (synchronously, before returning, so linkFor need
// not be safe for concurrent use) and sends that channel ev with Links set
// to just that link. A nil linkFor, or an empty URL, leaves ev.Links as it
// is; a channel sends only the links addressed to it either way. Use it for
// requested events; later events carry no links, so use Notify.
func (d *Dispatcher) NotifyEach(ev Event, linkFor func(approver string) string) {
	channels := d.channelsFor(ev.Type)
	evs := perChannel(channels, ev, linkFor)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.logger.Error("notify: dispatcher closed, event dropped",
			"event", ev.Type, "confirmation_id", ev.Confirmation.ID)
		return
	}
	for i, ch := range channels {
		d.wg.Go(func() {
			d.delivered(d.ctx, ch, ev, ch.Send(d.ctx, evs[i]))
		})
	}
}

// NotifyWait sends ev to every channel concurrently and waits for all of
// them (with their retries, bounded by ctx). It returns the failures joined,
// each naming its channel. It suits a Lambda, whose work must finish before
// it returns.
func (d *Dispatcher) NotifyWait(ctx context.Context, ev Event) error {
	return d.NotifyEachWait(ctx, ev, nil)
}

// NotifyEachWait is NotifyWait with a link per channel, as NotifyEach.
func (d *Dispatcher) NotifyEachWait(ctx context.Context, ev Event, linkFor func(approver string) string) error {
	channels := d.channelsFor(ev.Type)
	evs := perChannel(channels, ev, linkFor)
	errs := make([]error, len(channels))
	send := func(i int) {
		ch := channels[i]
		err := ch.Send(ctx, evs[i])
		d.delivered(ctx, ch, ev, err)
		if err != nil {
			errs[i] = fmt.Errorf("notify %s: %w", ch.Name(), err)
		}
	}
	// The last channel is sent on this goroutine, which waits anyway: one
	// goroutine (and its stack's growth) fewer per pause, none with one
	// channel.
	var wg sync.WaitGroup
	for i := range len(channels) - 1 {
		wg.Go(func() { send(i) })
	}
	if len(channels) > 0 {
		send(len(channels) - 1)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// perChannel builds each channel's copy of ev.
func perChannel(channels []Channel, ev Event, linkFor func(approver string) string) []Event {
	evs := make([]Event, len(channels))
	for i, ch := range channels {
		evs[i] = ev
		if linkFor == nil {
			continue
		}
		if u := linkFor(ch.Name()); u != "" {
			evs[i].Links = []EventLink{{Approver: ch.Name(), URL: u}}
		}
	}
	return evs
}

// Close stops accepting events and waits for the deliveries in flight. If
// ctx ends first, it cancels them (their retries stop) and returns ctx's
// error without waiting further. Calling it again waits again.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		d.cancel()
		return fmt.Errorf("notify: close: deliveries still in flight: %w", context.Cause(ctx))
	}
}
