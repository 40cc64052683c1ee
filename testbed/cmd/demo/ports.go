// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
)

// ports are the loopback ports of the demo. The defaults are fixed, so that the commands in docs/demo.md work
// as printed; a busy one is replaced by a free port. `up` writes them to ./data/demo/ports.json.
type ports struct {
	EtcdClient       int `json:"etcd_client"`
	EtcdPeer         int `json:"etcd_peer"`
	APIServer        int `json:"kube_apiserver"`
	OPA              int `json:"opa"`
	DecisionLogs     int `json:"collector_decision_logs"`
	MinIO            int `json:"minio"`
	MinIOConsole     int `json:"minio_console"`
	Kafka            int `json:"kafka"`
	ResultsGRPC      int `json:"results_grpc"`
	ResultsHTTP      int `json:"results_http"`
	CollectorHealth  int `json:"collector_health"`
	CollectorMetrics int `json:"collector_metrics"`
	Prometheus       int `json:"prometheus"`
	PolicyMetrics    int `json:"collector_policy_metrics"`
	VictoriaLogs     int `json:"victorialogs"`
}

var defaultPorts = ports{
	EtcdClient:       12379,
	EtcdPeer:         12380,
	APIServer:        16443,
	OPA:              18181,
	DecisionLogs:     18182,
	MinIO:            19000,
	MinIOConsole:     19001,
	Kafka:            19092,
	ResultsGRPC:      17070,
	ResultsHTTP:      17080,
	CollectorHealth:  13134,
	CollectorMetrics: 18888,
	Prometheus:       19090,
	PolicyMetrics:    19464,
	VictoriaLogs:     19428,
}

// MinIO's root credentials in the demo: local, loopback only, thrown away with ./data/demo.
const (
	minioUser     = "demo-admin"
	minioPassword = "demo-secret-key"
	bucket        = "policy-results"
	topic         = "policy-results"
)

// state is ./data/demo/ports.json: what `status` and the commands of docs/demo.md need.
type state struct {
	Ports         ports  `json:"ports"`
	MinIOUser     string `json:"minio_user"`
	MinIOPassword string `json:"minio_password"`
	Bucket        string `json:"bucket"`
	Topic         string `json:"topic"`
}

// choosePorts takes each default port that is free and a free one instead of each busy one.
func choosePorts() (ports, []string, error) {
	p := defaultPorts
	v := reflect.ValueOf(&p).Elem()
	var moved []string
	used := map[int]bool{}
	for i := range v.NumField() {
		port := int(v.Field(i).Int())
		if !free(port) || used[port] {
			np, err := freePort(used)
			if err != nil {
				return p, nil, err
			}
			moved = append(moved, fmt.Sprintf("%s %d is busy: using %d", v.Type().Field(i).Tag.Get("json"), port, np))
			port = np
			v.Field(i).SetInt(int64(port))
		}
		used[port] = true
	}
	return p, moved, nil
}

func free(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func freePort(used map[int]bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !used[port] {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port")
}

func writeState(e env, s state) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(e.path("ports.json"), append(b, '\n'), 0o600)
}

func readState(e env) (state, error) {
	var s state
	b, err := os.ReadFile(e.path("ports.json"))
	if err != nil {
		return s, fmt.Errorf("no demo state (%w): run `make demo`", err)
	}
	return s, json.Unmarshal(b, &s)
}
