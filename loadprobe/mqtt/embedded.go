package mqtt

import (
	"io"
	"log/slog"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// embeddedBroker is a mochi-mqtt broker on a random 127.0.0.1 port inside
// this process, allowing every client.
type embeddedBroker struct {
	srv  *mochi.Server
	addr string
}

func startEmbedded() (*embeddedBroker, error) {
	srv := mochi.New(&mochi.Options{
		InlineClient:             true,
		Logger:                   slog.New(slog.NewTextHandler(io.Discard, nil)),
		ClientNetWriteBufferSize: 2048,
		ClientNetReadBufferSize:  2048,
		SysTopicResendInterval:   3600,
	})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		return nil, err
	}
	l := listeners.NewTCP(listeners.Config{ID: "hostprep", Address: "127.0.0.1:0"})
	if err := srv.AddListener(l); err != nil {
		return nil, err
	}
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, err
	}
	return &embeddedBroker{srv: srv, addr: l.Address()}, nil
}

func (b *embeddedBroker) close() { _ = b.srv.Close() }
