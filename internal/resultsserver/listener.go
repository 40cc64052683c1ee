package resultsserver

import (
	"net"
	"sync"
)

// LimitListener serves at most max connections of l at once. One more is accepted and closed at once, and
// counted in results_server_connections_refused_total{listener=name}: a flood of connections then costs a
// file descriptor for a moment, not a connection's buffers and goroutines, and the client learns it was refused
// rather than waiting in the kernel's backlog. Connections that end free their place.
func (s *Server) LimitListener(l net.Listener, max int, name Listener) net.Listener {
	return &limitListener{Listener: l, slots: make(chan struct{}, max), refused: func() { s.metrics.connectionsRefused[name].Add(1) }}
}

type limitListener struct {
	net.Listener
	slots   chan struct{}
	refused func()
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			l.refused()
			_ = c.Close()
		}
	}
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
