package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// patchMetaTable renders the schema crates/kruise-engines/src/strategicpatch reads: for every Go
// struct reachable from core/v1 Pod and PodTemplateSpec (the types OpenKruise passes to
// strategicpatch.StrategicMergePatch), one line per JSON field, sorted by struct then field:
//
//	Struct<TAB>field<TAB>kind<TAB>elem<TAB>patchStrategy<TAB>patchMergeKey
//
// kind is the field's reflect kind after pointers ("struct", "map", "slice", "string", "int32",
// ...; "custom:Name" for a type with its own JSON encoding, such as Quantity or Time); elem the
// struct a struct field, a map's values or a list's items have ("" for anything else); the last
// two are the field's tags as written. Embedded `json:",inline"` structs are flattened as
// encoding/json does.
func patchMetaTable() []byte {
	lines := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		owner := typeName(t)
		var walk func(t reflect.Type)
		walk = func(t reflect.Type) {
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				tag, hasTag := f.Tag.Lookup("json")
				if tag == "-" || (!f.IsExported() && !f.Anonymous) {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct && !isCustom(f.Type) {
					walk(f.Type)
					continue
				}
				if !hasTag || name == "" {
					name = f.Name
				}
				ft := f.Type
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				kind, elem := ft.Kind().String(), reflect.Type(nil)
				switch {
				case ft.Name() != "" && isCustom(ft):
					kind = "custom:" + ft.Name()
				case ft.Kind() == reflect.Struct:
					elem = ft
				case ft.Kind() == reflect.Map:
					elem = ft.Elem()
				case ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8:
					elem = ft.Elem()
				}
				for elem != nil && elem.Kind() == reflect.Pointer {
					elem = elem.Elem()
				}
				elemName := ""
				if elem != nil && elem.Kind() == reflect.Struct && !isCustom(elem) {
					elemName = typeName(elem)
					visit(elem)
				}
				lines[fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", owner, name, kind, elemName,
					f.Tag.Get("patchStrategy"), f.Tag.Get("patchMergeKey"))] = true
			}
		}
		walk(t)
	}
	visit(reflect.TypeOf(corev1.Pod{}))
	visit(reflect.TypeOf(corev1.PodTemplateSpec{}))
	sorted := make([]string, 0, len(lines))
	for l := range lines {
		sorted = append(sorted, l)
	}
	sort.Strings(sorted)
	return []byte(strings.Join(sorted, "\n") + "\n")
}

// strategicPatchVectors applies apimachinery's strategicpatch.StrategicMergePatch (v0.32.10, as
// OpenKruise v1.9.0 links it) to each input line {"type": "Pod"|"PodTemplateSpec", "original":
// {...}, "patch": {...}} and writes
//
//	type<TAB>original<TAB>patch<TAB>result
//
// where result is the merged document as Go marshals it, or "error: " and the error's text.
func strategicPatchVectors(inputPath string) ([]byte, error) {
	var out bytes.Buffer
	err := eachLine(inputPath, func(line string) error {
		var in struct {
			Type     string          `json:"type"`
			Original json.RawMessage `json:"original"`
			Patch    json.RawMessage `json:"patch"`
		}
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			return err
		}
		var schema interface{}
		switch in.Type {
		case "Pod":
			schema = &corev1.Pod{}
		case "PodTemplateSpec":
			schema = &corev1.PodTemplateSpec{}
		default:
			return fmt.Errorf("unknown type %q", in.Type)
		}
		var compact [2]bytes.Buffer
		for i, raw := range []json.RawMessage{in.Original, in.Patch} {
			if err := json.Compact(&compact[i], raw); err != nil {
				return err
			}
		}
		result, err := strategicpatch.StrategicMergePatch(compact[0].Bytes(), compact[1].Bytes(), schema)
		text := string(result)
		if err != nil {
			text = "error: " + strings.ReplaceAll(err.Error(), "\n", " ")
		}
		fmt.Fprintf(&out, "%s\t%s\t%s\t%s\n", in.Type, compact[0].String(), compact[1].String(), text)
		return nil
	})
	return out.Bytes(), err
}
