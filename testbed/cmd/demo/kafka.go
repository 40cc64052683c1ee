// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// kafka runs a one-broker Kafka-protocol cluster (franz-go's kfake, as the project's tests use) on
// 127.0.0.1:PORT with the topic policy-results, keeping its log in DIR, until SIGTERM or SIGINT.
func kafka(args []string) error {
	fl := flag.NewFlagSet("kafka", flag.ContinueOnError)
	port := fl.Int("port", defaultPorts.Kafka, "listen port (127.0.0.1)")
	dir := fl.String("dir", "", "data directory (empty: in memory)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(*port), kfake.SeedTopics(1, topic), kfake.ClusterID("otelcol-policy-demo")}
	if *dir != "" {
		opts = append(opts, kfake.DataDir(*dir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	fmt.Printf("kfake broker listening on %v, topic %s\n", c.ListenAddrs(), topic)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s := <-sig
	fmt.Printf("%v: stopping\n", s)
	c.Close()
	return nil
}

// consume prints the records of the demo's topic from the start: key, headers and value, one record per
// line block, optionally only those whose event.name header is --event, at most --n of them.
func consume(args []string) error {
	fl := flag.NewFlagSet("consume", flag.ContinueOnError)
	event := fl.String("event", "", "only records with this event.name header (policy.result, policy.decision, policy.summary)")
	n := fl.Int("n", 0, "at most this many records (0: all)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	e, err := findEnv()
	if err != nil {
		return err
	}
	st, err := readState(e)
	if err != nil {
		return err
	}
	client, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:"+strconv.Itoa(st.Ports.Kafka)), kgo.ConsumeTopics(st.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer client.Close()
	printed := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		fetches := client.PollFetches(ctx)
		cancel()
		if fetches.NumRecords() == 0 {
			fmt.Fprintf(os.Stderr, "(%d records; no more within 3 s)\n", printed)
			return nil
		}
		for _, rec := range fetches.Records() {
			var headers []string
			ev := ""
			for _, h := range rec.Headers {
				headers = append(headers, h.Key+"="+string(h.Value))
				if h.Key == policyresult.AttrEventName {
					ev = string(h.Value)
				}
			}
			if *event != "" && ev != *event {
				continue
			}
			key := "null"
			if rec.Key != nil {
				key = string(rec.Key)
			}
			fmt.Printf("partition %d offset %d key %s headers %s\n%s\n", rec.Partition, rec.Offset, key, strings.Join(headers, ","), rec.Value)
			printed++
			if *n > 0 && printed >= *n {
				return nil
			}
		}
	}
}
