package dynamodb

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
)

// jsonOptions encode and decode the requests and answers: every struct
// field under its Go name (DynamoDB's member names), and the attribute
// values in DynamoDB's form: {"S": "..."}, {"N": "12"} (numbers as
// strings), {"B": "<base64>"}, {"BOOL": true}, {"NULL": true}, {"L": [...]},
// {"M": {...}}, {"SS": [...]}, {"NS": [...]}, {"BS": ["<base64>"...]}.
// Built at the first call, not at every cold start.
var jsonOptions = sync.OnceValue(func() json.Options {
	return json.JoinOptions(
		json.WithMarshalers(json.JoinMarshalers(json.MarshalToFunc(encodeItem), json.MarshalToFunc(encodeValue))),
		json.WithUnmarshalers(json.UnmarshalFromFunc(decodeValue)),
	)
})

// errEmptySet is DynamoDB's refusal of an empty set, made before sending.
var errEmptySet = errors.New("an empty set: DynamoDB refuses them")

// encodeItem writes an item (or a key, or expression values): a nil value
// in it is an error, not a JSON null.
func encodeItem(enc *jsontext.Encoder, m map[string]types.AttributeValue) error {
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	for k, v := range m {
		if err := enc.WriteToken(jsontext.String(k)); err != nil {
			return err
		}
		if err := encodeValue(enc, v); err != nil {
			return fmt.Errorf("%q: %w", k, err)
		}
	}
	return enc.WriteToken(jsontext.EndObject)
}

func encodeValue(enc *jsontext.Encoder, v types.AttributeValue) error {
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	var err error
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		err = writeTokens(enc, jsontext.String("S"), jsontext.String(v.Value))
	case *types.AttributeValueMemberN:
		err = writeTokens(enc, jsontext.String("N"), jsontext.String(v.Value))
	case *types.AttributeValueMemberB:
		err = writeTokens(enc, jsontext.String("B"), jsontext.String(base64.StdEncoding.EncodeToString(v.Value)))
	case *types.AttributeValueMemberBOOL:
		err = writeTokens(enc, jsontext.String("BOOL"), jsontext.Bool(v.Value))
	case *types.AttributeValueMemberNULL:
		err = writeTokens(enc, jsontext.String("NULL"), jsontext.Bool(v.Value))
	case *types.AttributeValueMemberSS:
		err = writeStrings(enc, "SS", v.Value, nil)
	case *types.AttributeValueMemberNS:
		err = writeStrings(enc, "NS", v.Value, nil)
	case *types.AttributeValueMemberBS:
		err = writeStrings(enc, "BS", nil, v.Value)
	case *types.AttributeValueMemberL:
		err = writeTokens(enc, jsontext.String("L"), jsontext.BeginArray)
		for _, e := range v.Value {
			if err != nil {
				break
			}
			err = encodeValue(enc, e)
		}
		if err == nil {
			err = enc.WriteToken(jsontext.EndArray)
		}
	case *types.AttributeValueMemberM:
		err = writeTokens(enc, jsontext.String("M"), jsontext.BeginObject)
		for k, e := range v.Value {
			if err != nil {
				break
			}
			if err = enc.WriteToken(jsontext.String(k)); err == nil {
				err = encodeValue(enc, e)
			}
			if err != nil {
				err = fmt.Errorf("%q: %w", k, err)
			}
		}
		if err == nil {
			err = enc.WriteToken(jsontext.EndObject)
		}
	default:
		err = fmt.Errorf("an attribute value of type %T", v)
	}
	if err != nil {
		return err
	}
	return enc.WriteToken(jsontext.EndObject)
}

func writeTokens(enc *jsontext.Encoder, toks ...jsontext.Token) error {
	for _, t := range toks {
		if err := enc.WriteToken(t); err != nil {
			return err
		}
	}
	return nil
}

// writeStrings writes a set: strs, or bins in base64.
func writeStrings(enc *jsontext.Encoder, name string, strs []string, bins [][]byte) error {
	if len(strs) == 0 && len(bins) == 0 {
		return fmt.Errorf("%s: %w", name, errEmptySet)
	}
	if err := writeTokens(enc, jsontext.String(name), jsontext.BeginArray); err != nil {
		return err
	}
	for _, s := range strs {
		if err := enc.WriteToken(jsontext.String(s)); err != nil {
			return err
		}
	}
	for _, b := range bins {
		if err := enc.WriteToken(jsontext.String(base64.StdEncoding.EncodeToString(b))); err != nil {
			return err
		}
	}
	return enc.WriteToken(jsontext.EndArray)
}

func decodeValue(dec *jsontext.Decoder, v *types.AttributeValue) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case 'n':
		*v = nil
		return nil
	case '{':
	default:
		return fmt.Errorf("an attribute value is a JSON %v, not an object", tok.Kind())
	}
	tok, err = dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '"' {
		return errors.New("an attribute value without its type")
	}
	switch name := tok.String(); name {
	case "S":
		s, err := readString(dec)
		*v = &types.AttributeValueMemberS{Value: s}
		if err != nil {
			return err
		}
	case "N":
		s, err := readString(dec)
		*v = &types.AttributeValueMemberN{Value: s}
		if err != nil {
			return err
		}
	case "B":
		b, err := readBinary(dec)
		*v = &types.AttributeValueMemberB{Value: b}
		if err != nil {
			return err
		}
	case "BOOL", "NULL":
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if k := tok.Kind(); k != 't' && k != 'f' {
			return fmt.Errorf("%s is a JSON %v, not a Boolean", name, k)
		}
		if name == "BOOL" {
			*v = &types.AttributeValueMemberBOOL{Value: tok.Bool()}
		} else {
			*v = &types.AttributeValueMemberNULL{Value: tok.Bool()}
		}
	case "SS", "NS", "BS":
		var strs []string
		var bins [][]byte
		err := readArray(dec, func() error {
			if name == "BS" {
				b, err := readBinary(dec)
				bins = append(bins, b)
				return err
			}
			s, err := readString(dec)
			strs = append(strs, s)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		switch name {
		case "SS":
			*v = &types.AttributeValueMemberSS{Value: strs}
		case "NS":
			*v = &types.AttributeValueMemberNS{Value: strs}
		default:
			*v = &types.AttributeValueMemberBS{Value: bins}
		}
	case "L":
		l := []types.AttributeValue{}
		err := readArray(dec, func() error {
			var e types.AttributeValue
			err := decodeValue(dec, &e)
			l = append(l, e)
			return err
		})
		if err != nil {
			return fmt.Errorf("list (L): %w", err)
		}
		*v = &types.AttributeValueMemberL{Value: l}
	case "M":
		m := map[string]types.AttributeValue{}
		if tok, err := dec.ReadToken(); err != nil {
			return err
		} else if tok.Kind() != '{' {
			return fmt.Errorf("map (M) is a JSON %v, not an object", tok.Kind())
		}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return fmt.Errorf("map (M): %w", err)
			}
			k := tok.String() // before the token is voided
			var e types.AttributeValue
			if err := decodeValue(dec, &e); err != nil {
				return fmt.Errorf("map (M) member %q: %w", k, err)
			}
			m[k] = e
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		*v = &types.AttributeValueMemberM{Value: m}
	default:
		return fmt.Errorf("an attribute value of type %q", name)
	}
	tok, err = dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '}' {
		return errors.New("an attribute value with more than one type")
	}
	return nil
}

func readString(dec *jsontext.Decoder) (string, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return "", err
	}
	if tok.Kind() != '"' {
		return "", fmt.Errorf("a JSON %v, not a string", tok.Kind())
	}
	return tok.String(), nil
}

func readBinary(dec *jsontext.Decoder) ([]byte, error) {
	s, err := readString(dec)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(s)
}

// readArray reads a JSON array, calling each for its elements.
func readArray(dec *jsontext.Decoder, each func() error) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '[' {
		return fmt.Errorf("a JSON %v, not an array", tok.Kind())
	}
	for dec.PeekKind() != ']' {
		if dec.PeekKind() == 0 {
			_, err := dec.ReadToken()
			return err
		}
		if err := each(); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}
