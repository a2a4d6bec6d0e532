// Command golden regenerates the Go-derived test vectors of crates/kruise-engines (see
// README.md). Usage, from hack/golden:
//
//	go run . -out ../..        # write into the repository
//	go run . -out /tmp/golden  # write the same tree elsewhere (make golden-check diffs it)
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

type output struct {
	path string // relative to -out
	gen  func() ([]byte, error)
}

func main() {
	out := flag.String("out", "", "repository root to write the vectors under (required)")
	inputs := flag.String("inputs", "inputs", "directory holding hash_inputs.jsonl, template_inputs.jsonl, uniteddeployment_inputs.jsonl, sidecarset_hash_inputs.jsonl and strategicpatch_inputs.jsonl")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "golden: -out is required (the repository root, e.g. -out ../..)")
		os.Exit(2)
	}
	outputs := []output{
		{"crates/kruise-engines/src/revision/go_types_v1_32.txt", func() ([]byte, error) { return goTypes(), nil }},
		{"crates/kruise-engines/src/revision/go_types_kruise_v1_9.txt", func() ([]byte, error) { return kruiseTypes(), nil }},
		{"crates/kruise-engines/src/revision/hash_vectors.tsv", func() ([]byte, error) {
			return hashVectors(filepath.Join(*inputs, "hash_inputs.jsonl"))
		}},
		{"crates/kruise-engines/src/revision/template_vectors.tsv", func() ([]byte, error) {
			return templateVectors(filepath.Join(*inputs, "template_inputs.jsonl"))
		}},
		{"crates/kruise-engines/src/revision/uniteddeployment_vectors.tsv", func() ([]byte, error) {
			return unitedDeploymentVectors(filepath.Join(*inputs, "uniteddeployment_inputs.jsonl"))
		}},
		{"crates/kruise-engines/src/updatesort/go_sort_vectors.tsv", sortVectors},
		{"crates/kruise-engines/src/sidecarset/hash_vectors.tsv", func() ([]byte, error) {
			return sidecarSetHashVectors(filepath.Join(*inputs, "sidecarset_hash_inputs.jsonl"))
		}},
		{"crates/kruise-engines/src/strategicpatch/patch_meta_v1_32.tsv", func() ([]byte, error) { return patchMetaTable(), nil }},
		{"crates/kruise-engines/src/strategicpatch/vectors.tsv", func() ([]byte, error) {
			return strategicPatchVectors(filepath.Join(*inputs, "strategicpatch_inputs.jsonl"))
		}},
	}
	if abs, err := filepath.Abs(*out); err == nil {
		fmt.Printf("golden: writing under %s\n", abs)
	}
	for _, o := range outputs {
		data, err := o.gen()
		if err != nil {
			fmt.Fprintf(os.Stderr, "golden: %s: %v\n", o.path, err)
			os.Exit(1)
		}
		dst := filepath.Join(*out, o.path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "golden: %v\n", err)
			os.Exit(1)
		}
		old, readErr := os.ReadFile(dst)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "golden: %v\n", err)
			os.Exit(1)
		}
		state := "new"
		if readErr == nil && string(old) == string(data) {
			state = "unchanged"
		} else if readErr == nil {
			state = "CHANGED"
		}
		sum := sha256.Sum256(data)
		fmt.Printf("wrote %s (%d lines, sha256 %x…, %s)\n", o.path, countLines(data), sum[:6], state)
	}
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}
