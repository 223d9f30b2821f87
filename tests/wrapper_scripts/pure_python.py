"""No array code at all: recursion, classes, string work. The wrapper must leave it alone."""
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Counter:
    def __init__(self):
        self.counts = {}

    def add(self, word):
        self.counts[word] = self.counts.get(word, 0) + 1

    def top(self, k):
        return sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def words(text):
    for w in text.lower().split():
        yield w.strip(".,")


def collatz(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
c = Counter()
text = "the quick brown fox jumps over the lazy dog. The dog sleeps, the fox runs. " * 50
for _ in range(20 * scale):
    for w in words(text):
        c.add(w)
print(c.top(5))
print(fib(18 + scale))
print(max(range(1, 2000 * scale), key=collatz))
