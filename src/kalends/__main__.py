from kalends.cli.main import main

main()
