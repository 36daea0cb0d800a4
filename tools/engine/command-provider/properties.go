package main

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// plain is v with every secret unwrapped: what the provider works with. Secrets stay secrets
// in what it returns, which is built from the inputs as they came.
func plain(v resource.PropertyValue) resource.PropertyValue {
	switch {
	case v.IsSecret():
		return plain(v.SecretValue().Element)
	case v.IsObject():
		out := resource.PropertyMap{}
		for k, e := range v.ObjectValue() {
			out[k] = plain(e)
		}
		return resource.NewObjectProperty(out)
	case v.IsArray():
		out := make([]resource.PropertyValue, 0, len(v.ArrayValue()))
		for _, e := range v.ArrayValue() {
			out = append(out, plain(e))
		}
		return resource.NewArrayProperty(out)
	}
	return v
}

// present: the key is set to something other than null.
func present(m resource.PropertyMap, key resource.PropertyKey) bool {
	v, ok := m[key]
	return ok && !plain(v).IsNull()
}

func stringOf(m resource.PropertyMap, key resource.PropertyKey) (string, bool) {
	v, ok := m[key]
	if !ok {
		return "", false
	}
	v = plain(v)
	if !v.IsString() {
		return "", false
	}
	return v.StringValue(), true
}

func intOf(m resource.PropertyMap, key resource.PropertyKey, fallback int) (int, error) {
	v, ok := m[key]
	if !ok || plain(v).IsNull() {
		return fallback, nil
	}
	v = plain(v)
	if !v.IsNumber() {
		return 0, fmt.Errorf("%s: expected a number, got %v", key, v)
	}
	return int(v.NumberValue()), nil
}

func boolOf(m resource.PropertyMap, key resource.PropertyKey, fallback bool) bool {
	v, ok := m[key]
	if !ok || !plain(v).IsBool() {
		return fallback
	}
	return plain(v).BoolValue()
}

// mapOf reads an object of strings (a command's environment).
func mapOf(m resource.PropertyMap, key resource.PropertyKey) map[string]string {
	out := map[string]string{}
	v, ok := m[key]
	if !ok || !plain(v).IsObject() {
		return out
	}
	for k, e := range plain(v).ObjectValue() {
		if e.IsString() {
			out[string(k)] = e.StringValue()
		}
	}
	return out
}
