package features

import (
	"errors"
	"io"
)

// ErrRead marks a failure of the database side of a collection being written: the rows or the
// count could not be read, after the status line has gone out.
var ErrRead = errors.New("features: reading the collection failed")

// streamChunk is how much is buffered before a write: large enough that syscalls and gzip blocks
// are few, small enough that memory does not grow with the page size.
const streamChunk = 32 << 10

// WriteCollection writes a GeoJSON FeatureCollection as its rows arrive: the features, then
// what tail appends (the members that depend on the whole page, and the closing brace). A
// failure to read is ErrRead (wrapped); any other error is the writer's (the client went away).
// It always closes the cursor.
func WriteCollection(w io.Writer, cur *Cursor, tail func(dst []byte) ([]byte, error)) error {
	defer cur.Close()
	buf := make([]byte, 0, streamChunk+8<<10)
	buf = append(buf, `{"type":"FeatureCollection","features":[`...)
	for first := true; ; first = false {
		mark := len(buf)
		if !first {
			buf = append(buf, ',')
		}
		var ok bool
		var err error
		if buf, ok, err = cur.Append(buf); err != nil {
			return errors.Join(ErrRead, err)
		}
		if !ok {
			buf = buf[:mark]
			break
		}
		if len(buf) >= streamChunk {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, ']')
	buf, err := tail(buf)
	if err != nil {
		return errors.Join(ErrRead, err)
	}
	_, err = w.Write(buf)
	return err
}
