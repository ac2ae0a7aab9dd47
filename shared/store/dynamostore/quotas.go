package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/store"
)

// A quota is a set of slots, one item each: pk QUOTA#<key>, sk
// SLOT#<n, 6 digits> for n below the limit, with "until" (unix
// nanoseconds: when the use it holds stops counting) and a ttl a minute
// later. Taking a use is a conditional PutItem on a slot that is free
// (absent, or its until passed), so at most limit uses are counted at any
// time, exactly, and concurrent takers write different items instead of
// racing on one record: two collide only when they pick the same free
// slot, and the loser tries another.
//
// TakeQuota first tries one slot picked at random (one write when the
// quota is far from full), then reads the key's slots with one consistent
// Query and tries its free ones in random order; a Query that finds none
// free is the refusal, with the earliest until.
const (
	skQuotaSlot = "SLOT#"
	attrUntil   = "until"
	// quotaRounds bounds the Query-and-try rounds of one take; each lost
	// round means other takers took every slot it tried.
	quotaRounds = 8
)

func slotSK(n int) string { return fmt.Sprintf("%s%06d", skQuotaSlot, n) }

// TakeQuota counts one use of key in a free slot (see above).
func (s *Store) TakeQuota(ctx context.Context, key string, limit int, now, until time.Time) error {
	if err := s.takeQuota(ctx, key, limit, now, until); err != nil {
		return fmt.Errorf("take quota %s: %w", key, err)
	}
	return nil
}

func (s *Store) takeQuota(ctx context.Context, key string, limit int, now, until time.Time) error {
	if limit < 1 || limit > 999999 {
		return fmt.Errorf("limit %d", limit)
	}
	ok, err := s.takeSlot(ctx, key, rand.IntN(limit), now, until)
	if ok || err != nil {
		return err
	}
	for range quotaRounds {
		free, earliest, err := s.freeSlots(ctx, key, limit, now)
		if err != nil {
			return err
		}
		if len(free) == 0 {
			return &store.QuotaFullError{Key: key, Limit: limit, Free: earliest}
		}
		rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		for _, n := range free[:min(len(free), 4)] {
			if ok, err := s.takeSlot(ctx, key, n, now, until); ok || err != nil {
				return err
			}
		}
	}
	return errors.New("every free slot was taken by another writer first, 8 rounds running")
}

// takeSlot writes slot n if it is free; false if another use holds it.
func (s *Store) takeSlot(ctx context.Context, key string, n int, now, until time.Time) (bool, error) {
	item := itemKey(prefixQuota+key, slotSK(n))
	item[attrUntil] = num(unixNano(until))
	item[attrTTL] = num(ttlSeconds(until.Add(time.Minute)))
	err := s.putIf(ctx, item, "attribute_not_exists(#pk) OR #until <= :now",
		map[string]string{"#pk": attrPK, "#until": attrUntil},
		map[string]types.AttributeValue{":now": num(unixNano(now))})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrConflict):
		return false, nil
	}
	return false, err
}

// freeSlots reads the key's slots consistently and returns the free ones
// below limit, and when the earliest held one frees.
func (s *Store) freeSlots(ctx context.Context, key string, limit int, now time.Time) ([]int, time.Time, error) {
	held := map[int]bool{}
	var earliest int64
	pages := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		ConsistentRead:           aws.Bool(true),
		KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :slot)"),
		ProjectionExpression:     aws.String("#sk, #until"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK, "#until": attrUntil},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(prefixQuota + key), ":slot": str(skQuotaSlot),
		},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("query slots: %w", err)
		}
		for _, it := range page.Items {
			n, err := strconv.Atoi(stringAttr(it, attrSK)[len(skQuotaSlot):])
			if err != nil || n >= limit {
				continue
			}
			u, err := strconv.ParseInt(numberAttr(it, attrUntil), 10, 64)
			if err != nil || u <= unixNano(now) {
				continue
			}
			held[n] = true
			if earliest == 0 || u < earliest {
				earliest = u
			}
		}
	}
	var free []int
	for n := range limit {
		if !held[n] {
			free = append(free, n)
		}
	}
	return free, time.Unix(0, earliest).UTC(), nil
}
