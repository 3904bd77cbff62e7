// Command latencies posts one AdmissionReview to a webhook at a fixed rate over keep-alive
// connections and writes every request's latency (microseconds, one per line), so that make bench can
// draw the whole distribution of the product and of the Go baseline measured the same way.
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"
)

func main() {
	url := flag.String("url", "", "webhook URL (loopback)")
	bodyFile := flag.String("body", "", "AdmissionReview JSON file")
	rate := flag.Int("rate", 300, "requests per second")
	dur := flag.Duration("d", 10*time.Second, "how long to send")
	conns := flag.Int("c", 8, "connections")
	out := flag.String("out", "", "file for the latencies")
	flag.Parse()
	body, err := os.ReadFile(*bodyFile)
	if err != nil || *url == "" || *out == "" || *rate <= 0 {
		fmt.Fprintln(os.Stderr, "usage: latencies -url URL -body FILE -out FILE [-rate N -d DUR -c N]", err)
		os.Exit(2)
	}
	// Loopback to a webhook whose certificate the bench made: the latency, not the trust, is measured.
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
		MaxIdleConnsPerHost: *conns,
		MaxConnsPerHost:     *conns,
	}
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}

	ticks := make(chan struct{}, *rate)
	var mu sync.Mutex
	var samples []int64
	errors := 0
	var wg sync.WaitGroup
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range ticks {
				t0 := time.Now()
				resp, err := client.Post(*url, "application/json", bytes.NewReader(body))
				ok := err == nil && resp.StatusCode == http.StatusOK
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				took := time.Since(t0).Microseconds()
				mu.Lock()
				if ok {
					samples = append(samples, took)
				} else {
					errors++
				}
				mu.Unlock()
			}
		}()
	}
	interval := time.Second / time.Duration(*rate)
	deadline := time.Now().Add(*dur)
	for next := time.Now(); next.Before(deadline); next = next.Add(interval) {
		time.Sleep(time.Until(next))
		ticks <- struct{}{}
	}
	close(ticks)
	wg.Wait()

	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := bufio.NewWriter(f)
	for _, s := range samples {
		fmt.Fprintln(w, s)
	}
	if err := w.Flush(); err != nil || f.Close() != nil {
		fmt.Fprintln(os.Stderr, "writing", *out, err)
		os.Exit(1)
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	pick := func(q float64) float64 {
		if len(samples) == 0 {
			return 0
		}
		return float64(samples[int(q*float64(len(samples)-1))]) / 1000
	}
	fmt.Printf("sent=%d ok=%d errors=%d p50=%.2fms p99=%.2fms\n", len(samples)+errors, len(samples), errors, pick(0.5), pick(0.99))
}
