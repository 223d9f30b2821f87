import sys

print("argv", sys.argv[1:], "name", __name__, "path0", sys.path[0].rsplit("/", 1)[-1])
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
