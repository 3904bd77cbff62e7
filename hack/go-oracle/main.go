// Command go-oracle answers what the Go libraries upstream Fluid is built on compute, so the
// Python port is tested against those libraries rather than against a reading of them. One
// request per line on stdin, one answer per line on stdout (flushed, so a test can converse):
//
//	quantity<TAB>TEXT        resource.ParseQuantity(TEXT).String(), or "!error: ..."
//	add<TAB>A<TAB>B          A.Add(B) then String(), or "!error: ..."
//	runtimejson<TAB>JSON     JSON decoded (strictly) into upstream's runtime.json types and encoded
//	                         again by encoding/json, or "!error: ..."
//
// The types below restate upstream's CacheRuntimeConfig (pkg/common in fluid-cloudnative/fluid):
// field order and omitempty tags are what decide runtime.json's bytes.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

type runtimeConfig struct {
	Mounts      []mountConfig    `json:"mounts,omitempty"`
	AccessModes []string         `json:"accessModes,omitempty"`
	TargetPath  string           `json:"targetPath,omitempty"`
	Master      *componentConfig `json:"master,omitempty"`
	Worker      *componentConfig `json:"worker,omitempty"`
	Client      *componentConfig `json:"client,omitempty"`
}

type mountConfig struct {
	MountPoint     string            `json:"mountPoint"`
	Options        map[string]string `json:"options,omitempty"`
	EncryptOptions map[string]string `json:"encryptOptions,omitempty"`
	Name           string            `json:"name,omitempty"`
	Path           string            `json:"path,omitempty"`
	ReadOnly       bool              `json:"readOnly,omitempty"`
	Shared         bool              `json:"shared,omitempty"`
}

type componentConfig struct {
	Enabled           bool              `json:"enabled,omitempty"`
	Name              string            `json:"name,omitempty"`
	Options           map[string]string `json:"options,omitempty"`
	Replicas          int32             `json:"replicas,omitempty"`
	Service           serviceConfig     `json:"service,omitempty"`
	TieredStoreLevels []levelConfig     `json:"tieredStoreLevels,omitempty"`
}

type serviceConfig struct {
	Name string `json:"name"`
}

type levelConfig struct {
	MountPaths []string `json:"mountPaths,omitempty"`
	MediumType string   `json:"mediumType,omitempty"`
	Quotas     []string `json:"quotas,omitempty"`
	High       string   `json:"high,omitempty"`
	Low        string   `json:"low,omitempty"`
}

func quantity(text string) (string, error) {
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return "", err
	}
	return q.String(), nil
}

func add(a, b string) (string, error) {
	x, err := resource.ParseQuantity(a)
	if err != nil {
		return "", err
	}
	y, err := resource.ParseQuantity(b)
	if err != nil {
		return "", err
	}
	x.Add(y)
	return x.String(), nil
}

func runtimeJSON(doc string) (string, error) {
	decoder := json.NewDecoder(strings.NewReader(doc))
	decoder.DisallowUnknownFields()
	var config runtimeConfig
	if err := decoder.Decode(&config); err != nil {
		return "", err
	}
	out, err := json.Marshal(config)
	return string(out), err
}

func answer(line string) (string, error) {
	op, rest, _ := strings.Cut(line, "\t")
	switch op {
	case "quantity":
		return quantity(rest)
	case "add":
		a, b, _ := strings.Cut(rest, "\t")
		return add(a, b)
	case "runtimejson":
		return runtimeJSON(rest)
	}
	return "", fmt.Errorf("unknown request %q", op)
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		result, err := answer(in.Text())
		if err != nil {
			result = "!error: " + strings.ReplaceAll(err.Error(), "\n", " ")
		}
		fmt.Fprintln(out, result)
		out.Flush()
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
