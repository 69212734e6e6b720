package ai

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/google/uuid"

	"meridian/internal/apperr"
)

// Event is one event of an AI stream: Name is its event name, Data its payload, whose "type"
// equals Name (interface spec section 6).
type Event struct {
	Name string
	Data any
}

// Payloads of the events.
type (
	tokenEvent struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	toolCallEvent struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	toolResultEvent struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Name    string `json:"name"`
		OK      bool   `json:"ok"`
		Summary string `json:"summary"`
	}
	actionsEvent struct {
		Type    string   `json:"type"`
		Actions []Action `json:"actions"`
	}
	mapEvent struct {
		Type     string          `json:"type"`
		MapDraft json.RawMessage `json:"map_draft"`
		MapID    *uuid.UUID      `json:"map_id"`
	}
	doneEvent struct {
		Type        string `json:"type"`
		Explanation string `json:"explanation"`
	}
)

func token(text string) Event {
	return Event{Name: "token", Data: tokenEvent{Type: "token", Text: text}}
}
func done(explanation string) Event {
	return Event{Name: "done", Data: doneEvent{Type: "done", Explanation: explanation}}
}

// Stream is an AI answer in the making. Next gives its events in order, the last one `done`;
// Close stops it (and the provider call under it) when its reader goes away.
type Stream struct {
	events <-chan Event
	cancel context.CancelFunc
}

// Next waits for the next event; false once the stream has ended.
func (s *Stream) Next() (Event, bool) {
	e, ok := <-s.events
	return e, ok
}

// Close stops the stream: the conversation is cancelled, and so is the provider's request.
func (s *Stream) Close() {
	s.cancel()
	for range s.events { //nolint:revive // drained so the conversation's goroutine ends
	}
}

// startStream runs work in its own goroutine and streams what it emits, then a `done` event
// with the explanation it returns. It answers once the first event exists: a call that fails
// before the provider said anything (refused, unreachable, quota) fails here, as a problem
// with its status; a failure after that ends the stream with a `done` event saying so.
// The stream's context is ctx: when the client goes away, the conversation stops.
func startStream(ctx context.Context, work func(ctx context.Context, emit func(Event)) (string, error)) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	events := make(chan Event, 32)
	started, failed := make(chan struct{}), make(chan error, 1)
	var once sync.Once
	begun := false // only the work's goroutine reads and writes it
	emit := func(e Event) {
		begun = true
		once.Do(func() { close(started) })
		select {
		case events <- e:
		case <-ctx.Done():
		}
	}
	go func() {
		defer close(events)
		explanation, err := work(ctx, emit)
		switch {
		case err != nil && !begun:
			failed <- err
			return
		case ctx.Err() != nil:
			return // the reader is gone: nobody hears a last word
		case err != nil:
			explanation = failureNote(err)
		}
		emit(done(explanation))
	}()
	select {
	case <-started:
		return &Stream{events: events, cancel: cancel}, nil
	case err := <-failed:
		cancel()
		return nil, err
	}
}

// failureNote is the explanation of a stream that failed after it started.
func failureNote(err error) string {
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Kind != apperr.KindInternal {
		return "The assistant stopped before it finished: " + ae.Detail + "."
	}
	return "The assistant stopped before it finished: the server could not complete the answer."
}
