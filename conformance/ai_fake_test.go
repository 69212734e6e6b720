package conformance

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAI is an AI provider written for the tests: it speaks the OpenAI-compatible chat
// completions and embeddings API (under /v1/) and Anthropic's Messages API (/v1/messages), in
// their streaming wire formats, and answers the turns a test scripts, one per chat request.
type fakeAI struct {
	srv  *httptest.Server
	dims int // of its embeddings
	// forgetEmbeddings leaves embeddings requests out of requests(): a benchmark sends tens of
	// thousands, which the provider need not hold (the machine's CPU is the benchmark's).
	forgetEmbeddings bool

	mu        sync.Mutex
	turns     []fakeTurn
	reqs      []fakeRequest
	lastFrame time.Time     // when the last scripted answer's final frame was written
	cancelled chan struct{} // a hanging answer's request went away
}

// fakeTurn is one answer: text in chunks and tool calls, or an error status.
type fakeTurn struct {
	text       []string
	calls      []fakeCall
	tokens     int           // usage reported (input and output together); 0: none
	status     int           // answer this error status instead
	message    string        // of the error
	retryAfter string        // header of the error
	gap        time.Duration // between frames
	cut        bool          // break the connection after the text, before the end of the message
	hang       bool          // after the text, wait for the request to go away
}

type fakeCall struct {
	name string
	args any
}

// fakeRequest is a request the provider got: its path and decoded body.
type fakeRequest struct {
	Path string
	Body map[string]any
}

func newFakeAI(t testing.TB) *fakeAI {
	f := &fakeAI{cancelled: make(chan struct{}, 8), dims: fakeDims}
	f.srv = httptest.NewServer(f)
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

// script queues the answers of the next chat requests; unscripted requests are answered "ok".
func (f *fakeAI) script(turns ...fakeTurn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.turns = append(f.turns, turns...)
}

// requests are the chat and embeddings requests received so far.
func (f *fakeAI) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.reqs...)
}

func (f *fakeAI) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.turns, f.reqs = nil, nil
}

func (f *fakeAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &body)
	embedding := strings.HasSuffix(r.URL.Path, "/embeddings")
	f.mu.Lock()
	if !embedding || !f.forgetEmbeddings {
		f.reqs = append(f.reqs, fakeRequest{Path: r.URL.Path, Body: body})
	}
	turn := fakeTurn{text: []string{"ok"}}
	if !embedding && len(f.turns) > 0 {
		turn, f.turns = f.turns[0], f.turns[1:]
	}
	f.mu.Unlock()
	anthropic := strings.HasSuffix(r.URL.Path, "/messages")
	switch {
	case embedding:
		fakeEmbeddings(w, body, f.dims)
		return
	case turn.status != 0:
		if turn.retryAfter != "" {
			w.Header().Set("Retry-After", turn.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(turn.status)
		if anthropic {
			fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":%q}}`, turn.message)
		} else {
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"server_error","code":null}}`, turn.message)
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	var frames, end []string
	if anthropic {
		frames, end = anthropicFrames(turn)
	} else {
		frames, end = openAIFrames(turn)
	}
	fl := w.(http.Flusher)
	for _, fr := range frames {
		if _, err := io.WriteString(w, fr); err != nil {
			return
		}
		fl.Flush()
		time.Sleep(turn.gap)
	}
	switch {
	case turn.hang:
		select {
		case <-r.Context().Done():
			f.cancelled <- struct{}{}
		case <-time.After(30 * time.Second):
		}
		return
	case turn.cut:
		panic(http.ErrAbortHandler) // the connection breaks: no end of the message, no end of the body
	}
	f.mu.Lock()
	f.lastFrame = time.Now()
	f.mu.Unlock()
	for _, fr := range end {
		_, _ = io.WriteString(w, fr)
	}
	fl.Flush()
}

func sse(event string, data any) string {
	b, _ := json.Marshal(data)
	if event == "" {
		return "data: " + string(b) + "\n\n"
	}
	return "event: " + event + "\ndata: " + string(b) + "\n\n"
}

func argsOf(c fakeCall) string {
	b, _ := json.Marshal(c.args)
	return string(b)
}

// openAIFrames are a turn's chat.completion.chunk frames, the arguments of each call in two
// pieces as OpenAI sends them; end is the finish, the usage and [DONE].
func openAIFrames(t fakeTurn) (frames, end []string) {
	chunk := func(choices []any, extra map[string]any) string {
		m := map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "test-model", "choices": choices}
		for k, v := range extra {
			m[k] = v
		}
		return sse("", m)
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	frames = append(frames, chunk(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil))
	for _, s := range t.text {
		frames = append(frames, chunk(delta(map[string]any{"content": s}, nil), nil))
	}
	for i, c := range t.calls {
		args := argsOf(c)
		half := len(args) / 2
		frames = append(frames, chunk(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d", i),
			"type": "function", "function": map[string]any{"name": c.name, "arguments": args[:half]}}}}, nil), nil))
		frames = append(frames, chunk(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i,
			"function": map[string]any{"arguments": args[half:]}}}}, nil), nil))
	}
	finish := "stop"
	if len(t.calls) > 0 {
		finish = "tool_calls"
	}
	end = append(end, chunk(delta(map[string]any{}, finish), nil))
	if t.tokens > 0 {
		end = append(end, chunk([]any{}, map[string]any{"usage": map[string]any{"prompt_tokens": t.tokens - t.tokens/4,
			"completion_tokens": t.tokens / 4, "total_tokens": t.tokens}}))
	}
	end = append(end, "data: [DONE]\n\n")
	return frames, end
}

// anthropicFrames are a turn's Messages API stream events: message_start, a text block, a
// tool_use block per call (its input in two input_json_delta pieces); end is message_delta
// and message_stop.
func anthropicFrames(t fakeTurn) (frames, end []string) {
	in := t.tokens - t.tokens/4
	frames = append(frames, sse("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": "test-model", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": 0}}}))
	block := 0
	if len(t.text) > 0 {
		frames = append(frames, sse("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}}))
		for _, s := range t.text {
			frames = append(frames, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": s}}))
		}
		frames = append(frames, sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}))
		block++
	}
	for i, c := range t.calls {
		args := argsOf(c)
		half := len(args) / 2
		frames = append(frames, sse("content_block_start", map[string]any{"type": "content_block_start", "index": block,
			"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", i), "name": c.name, "input": map[string]any{}}}))
		for _, part := range []string{args[:half], args[half:]} {
			frames = append(frames, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": block,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}}))
		}
		frames = append(frames, sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": block}))
		block++
	}
	stop := "end_turn"
	if len(t.calls) > 0 {
		stop = "tool_use"
	}
	end = append(end, sse("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": t.tokens / 4}}))
	end = append(end, sse("message_stop", map[string]any{"type": "message_stop"}))
	return frames, end
}

// fakeDims is the length of the fake's embeddings unless a test sets another.
const fakeDims = 16

// fakeEmbeddings answers an embeddings request: each text's words counted into dims buckets, so
// texts sharing words are near one another.
func fakeEmbeddings(w http.ResponseWriter, body map[string]any, dims int) {
	var texts []string
	switch in := body["input"].(type) {
	case string:
		texts = []string{in}
	case []any:
		for _, s := range in {
			texts = append(texts, fmt.Sprint(s))
		}
	}
	type embedding struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	type usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
	data := make([]embedding, len(texts))
	for i, s := range texts {
		vec := bagOfWords(s, dims)
		data[i] = embedding{Object: "embedding", Index: i, Embedding: vec}
		if body["encoding_format"] == "base64" {
			// As OpenAI answers it: the vector's float32s, little-endian, in base64.
			raw := make([]byte, 0, 4*dims)
			for _, x := range vec {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(float32(x)))
			}
			data[i].Embedding = base64.StdEncoding.EncodeToString(raw)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Object string      `json:"object"`
		Data   []embedding `json:"data"`
		Model  string      `json:"model"`
		Usage  usage       `json:"usage"`
	}{"list", data, "test-embed", usage{len(texts), len(texts)}})
}

func bagOfWords(s string, dims int) []float64 {
	v := make([]float64, dims)
	v[0] = 0.01 // no text is the zero vector
	for _, word := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
		h := fnv.New32a()
		h.Write([]byte(word))
		v[h.Sum32()%uint32(dims)]++
	}
	return v
}

// sseEvent is one frame of a server-sent event stream.
type sseEvent struct {
	Name string
	Data map[string]any
}

// parseSSE reads every frame of a text/event-stream body.
func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, frame := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
		if frame == "" {
			continue
		}
		var e sseEvent
		for _, line := range strings.Split(frame, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				e.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e.Data); err != nil {
					t.Fatalf("frame data is not JSON: %q", line)
				}
			}
		}
		if e.Name == "" || e.Data["type"] != e.Name {
			t.Fatalf("frame without an event name equal to its type: %q", frame)
		}
		out = append(out, e)
	}
	return out
}
