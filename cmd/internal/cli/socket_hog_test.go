package cli

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// childSocketHog is a client that tries to monopolise a token socket: it
// opens N connections one after another, asks each for a path that does
// not exist (404: no store work) and keeps it open, idle, as a kept-alive
// connection. It prints "socket: PATH", then "held N answered M" once all
// are open (it stops waiting for answers once one takes a second: a
// server that queues connections), then "closed I" for each connection
// the server closes (I counts from 0 in the order opened). It exits when
// its stdin closes, at most after 2 minutes.
//
//	sockethog N [SOCKET]    (SOCKET: $SHIPKEY_SOCKET, as exec --serve sets)
func childSocketHog() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil {
		os.Exit(99)
	}
	sock := os.Getenv("SHIPKEY_SOCKET")
	if len(os.Args) > 2 {
		sock = os.Args[2]
	}
	fmt.Println("socket:", sock)
	answered, waitAnswers := 0, true
	conns := make([]net.Conn, 0, n)
	for i := range n {
		c, err := net.Dial("unix", sock)
		if err != nil {
			fmt.Println("dial error:", err)
			os.Exit(1)
		}
		conns = append(conns, c)
		br := bufio.NewReader(c)
		_, _ = io.WriteString(c, "GET /v1/hog HTTP/1.1\r\nHost: shipkey\r\n\r\n")
		if waitAnswers {
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				waitAnswers = false
			} else {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusNotFound {
					answered++
				}
			}
			_ = c.SetReadDeadline(time.Time{})
		}
		go func() {
			_, _ = io.Copy(io.Discard, br) // until the server closes it
			fmt.Printf("closed %d\n", i)
		}()
	}
	fmt.Printf("held %d answered %d\n", len(conns), answered)
	stdinClosed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stdinClosed) }()
	select {
	case <-stdinClosed:
	case <-time.After(2 * time.Minute):
	}
}
